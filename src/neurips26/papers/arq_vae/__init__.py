"""ARQ-VAE: a label-free compact memory of frame features for temporal action segmentation.

A residual-quantized autoencoder is trained on unlabelled frame features with quantize
dropout; each frame then keeps only the residual prefix chosen by a rate-distortion rule
under a byte budget, the decoder is fine-tuned on the codes actually kept, and a
segmentation model (a small MS-TCN) trains on the reconstructed features. Baselines:
fixed-depth RVQ, PCA + uint8, temporal subsampling and k-means at matched bytes.
"""

from .baselines import BaselineMemory, kmeans_memory, pca_uint8_memory, subsample_memory
from .data import TASDataset, make_procedural_videos, photo_pan_frames
from .memory import (
    FeatureMemory,
    adaptive_truncate,
    code_bytes,
    finetune_decoder,
    fixed_depth_memory,
    memory_errors,
    model_nbytes,
    tolerance_lengths,
    truncation_lengths,
)
from .model import ARQVAE, ARQVAEOutput, ResidualQuantizer, train_arqvae
from .segmentation import (
    MSTCN,
    MSTCNTraining,
    SegMetrics,
    hungarian_relabel,
    mode_filter,
    segmentation_metrics,
    segments,
    train_mstcn,
    unsupervised_segment,
)

__all__ = [
    "ARQVAE",
    "MSTCN",
    "ARQVAEOutput",
    "BaselineMemory",
    "FeatureMemory",
    "MSTCNTraining",
    "ResidualQuantizer",
    "SegMetrics",
    "TASDataset",
    "adaptive_truncate",
    "code_bytes",
    "finetune_decoder",
    "fixed_depth_memory",
    "hungarian_relabel",
    "kmeans_memory",
    "make_procedural_videos",
    "memory_errors",
    "mode_filter",
    "model_nbytes",
    "pca_uint8_memory",
    "photo_pan_frames",
    "segmentation_metrics",
    "segments",
    "subsample_memory",
    "tolerance_lengths",
    "train_arqvae",
    "train_mstcn",
    "truncation_lengths",
    "unsupervised_segment",
]
