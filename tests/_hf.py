"""Hugging Face objects the LLM papers' tests build themselves (nothing is downloaded).

- :func:`tiny_tokenizer`: a word-level ``PreTrainedTokenizerFast`` over a fixed word list
  (ids below 256, so it fits :func:`neurips26.common.models.llm.tiny_causal_lm`'s vocabulary);
  calling it gives a real ``BatchEncoding``.
- :func:`tiny_gpt2`: a seeded random GPT-2 (``Conv1D`` maps ``c_attn``/``c_proj``/``c_fc``).
"""

from __future__ import annotations

import torch

WORDS = ("the cat sat on a mat and dog ran to park it was very good bad day night "
         "yes no answer is sun moon red blue green one two three").split()


def tiny_tokenizer(padding_side: str = "right"):
    """A word-level fast tokenizer: ``[PAD]`` = 0, ``[UNK]`` = 1, the words from 2."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[PAD]": 0, "[UNK]": 1, **{w: i + 2 for i, w in enumerate(WORDS)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]")
    fast.padding_side = padding_side
    return fast


def tiny_gpt2(seed: int = 0, *, n_embd: int = 32, n_layer: int = 2, n_head: int = 4,
              vocab_size: int = 256, dtype=torch.float32):
    """A randomly initialised GPT-2 LM head model (eager attention, eval mode)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=vocab_size, n_positions=128, n_embd=n_embd,
                        n_layer=n_layer, n_head=n_head, resid_pdrop=0.0, embd_pdrop=0.0,
                        attn_pdrop=0.0, bos_token_id=1, eos_token_id=1)
    config._attn_implementation = "eager"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = GPT2LMHeadModel(config)
    return model.to(dtype).eval()
