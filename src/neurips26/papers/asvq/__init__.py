"""ASVQ: adaptive-scale vector quantization over a frozen random codebook.

A vector quantizer whose codes are fixed random directions under a few learned scales
(``c_k = mu + sigma * b_k``), trained decoupled from the encoder, against codebook
collapse; with the baselines (vanilla VQ, EMA VQ with dead-code expiry, SimVQ), all with
``vector-quantize-pytorch``'s call convention, small VQ-VAE tokenizers for images and
8 kHz speech, and the usage / perplexity metrics.
"""

from .autoencoder import (
    KINDS,
    AEOutput,
    EvalResult,
    TrainResult,
    VQAutoencoder,
    count_loss_spikes,
    evaluate_vqae,
    train_vqae,
)
from .data import SPEECH_DIR, SpeechClips, load_speech_clips, log_spectrogram, read_wav
from .quantize import (
    ASVQ,
    EMAVQ,
    SCALES,
    SimVQ,
    VanillaVQ,
    VQOutput,
    codebook_perplexity,
    codebook_usage,
    nearest_code,
    rotate_to,
)

__all__ = [
    "ASVQ",
    "EMAVQ",
    "KINDS",
    "SCALES",
    "SPEECH_DIR",
    "AEOutput",
    "EvalResult",
    "SimVQ",
    "SpeechClips",
    "TrainResult",
    "VQAutoencoder",
    "VQOutput",
    "VanillaVQ",
    "codebook_perplexity",
    "codebook_usage",
    "count_loss_spikes",
    "evaluate_vqae",
    "load_speech_clips",
    "log_spectrogram",
    "nearest_code",
    "read_wav",
    "rotate_to",
    "train_vqae",
]
