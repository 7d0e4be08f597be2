"""Steered generation: sampled continuations, per-step KL attribution and coherence.

:func:`generate_steered` samples continuations with a key/value cache while ``v`` is added
after block ``layer`` (``"all"``: every prompt position and every new token; ``"last"``:
the last prompt position and every new token). :func:`generation_eval` then replays the
sequences teacher-forced, unsteered and under each vector to compare, and reports per step
``t`` the divergence between the steered and unsteered next-token distributions,

    KL_t(u) = mean_b KL( p(. | y_<t ; u) || p(. | y_<t) ),                 # Eq. (6)

the coherence (the unsteered model's mean per-token NLL of the continuation) and, given a
decoder and a scorer, the behaviour score of the decoded continuations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from neurips26.common.validation import check_float, check_int

from .steering import (
    _check_layer,
    _check_vector,
    _logits,
    _tokens,
    _vocab,
    check_model,
    check_positions,
    model_dtype,
    steer,
)

__all__ = ["GenerationEval", "generate_steered", "generation_eval"]

MAX_NEW_TOKENS = 4096


def _check_gen_args(model, prompts, attention_mask, layer, positions):
    dim = check_model(model)
    layer = _check_layer(model, layer)
    positions = check_positions(positions)
    if positions not in ("all", "last"):
        raise ValueError(f"positions must be 'all' or 'last' for generation, got {positions!r}")
    ids, mask = _tokens(prompts, "prompts", _vocab(model), attention_mask)
    return dim, layer, positions, ids, mask


@torch.no_grad()
def generate_steered(model, prompts, v, *, layer: int, positions: str = "all",
                     attention_mask=None, max_new_tokens: int = 32, temperature: float = 1.0,
                     seed: int = 0) -> torch.Tensor:  # fmt: skip
    """Sample ``max_new_tokens`` tokens after each prompt while steering with ``v``.

    Parameters
    ----------
    model : causal LM (Hugging Face, with a key/value cache)
    prompts : int array, shape (B, T), left-padded, or a tokenizer output
    v : Tensor or array_like, shape (d,), or None (unsteered)
    layer, positions : see :func:`.steer`
    attention_mask : 0/1 array, shape (B, T), optional
    max_new_tokens : int
    temperature : float
        ``0`` is greedy decoding.
    seed : int
        Seeds the sampling generator.

    Returns
    -------
    LongTensor, shape (B, N): the new tokens.

    Examples
    --------
    >>> from neurips26.common.models.llm import tiny_causal_lm
    >>> m = tiny_causal_lm(seed=0)
    >>> generate_steered(m, [[1, 2, 3]], torch.zeros(64), layer=1, max_new_tokens=4).shape
    torch.Size([1, 4])
    """
    dim, layer, positions, ids, mask = _check_gen_args(model, prompts, attention_mask, layer,
                                                       positions)  # fmt: skip
    v = torch.zeros(dim, dtype=model_dtype(model)) if v is None else _check_vector(v, dim)
    n = check_int(max_new_tokens, "max_new_tokens", min=1, max=MAX_NEW_TOKENS)
    temperature = check_float(temperature, "temperature", min=0.0, max=100.0)
    seed = check_int(seed, "seed", min=0, max=2**63 - 1)
    gen = torch.Generator().manual_seed(seed)
    mask = torch.ones_like(ids) if mask is None else mask
    out = []
    with steer(model, v, layer=layer, positions=positions):
        result = model(input_ids=ids, attention_mask=mask, use_cache=True)
        cache = getattr(result, "past_key_values", None) or getattr(result, "cache", None)
        logits = result.logits[:, -1]
        for step in range(n):
            if temperature == 0:
                nxt = logits.argmax(-1)
            else:
                probs = torch.softmax(logits.double() / temperature, -1)
                nxt = torch.multinomial(probs.cpu(), 1, generator=gen).squeeze(1)
                nxt = nxt.to(logits.device)
            out.append(nxt)
            if step == n - 1:
                break
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], 1)
            logits = _logits(model, nxt[:, None], mask, cache)[:, -1]
    return torch.stack(out, 1)


@dataclass(frozen=True)
class GenerationEval:
    """Continuations sampled under a steering vector, and what they show.

    Attributes
    ----------
    tokens : ndarray, shape (B * S, N)
        The sampled new tokens (``S`` samples per prompt).
    kl_per_step : dict of str -> ndarray, shape (N,)
        Eq. (6) for ``"self"`` (the generating vector) and each vector in ``others``.
    coherence_nll : float
        Unsteered model's mean NLL per continuation token.
    behaviour : float
        Mean scorer probability of the decoded continuations (NaN without a scorer).
    texts : tuple of str
        Decoded continuations (empty without a decoder).
    """

    tokens: np.ndarray
    kl_per_step: dict = field(default_factory=dict)
    coherence_nll: float = float("nan")
    behaviour: float = float("nan")
    texts: tuple[str, ...] = ()

    def mean_kl(self, name: str = "self") -> float:
        """Mean over steps of ``KL_t`` for ``name``."""
        if name not in self.kl_per_step:
            raise ValueError(f"name: no KL recorded for {name!r}; have {sorted(self.kl_per_step)}")
        return float(np.mean(self.kl_per_step[name]))


@torch.no_grad()
def generation_eval(model, prompts, v, *, layer: int, positions: str = "all",
                    attention_mask=None, max_new_tokens: int = 32, num_samples: int = 1,
                    temperature: float = 1.0, seed: int = 0, others: dict | None = None,
                    decode: Callable | None = None,
                    scorer: Callable | None = None) -> GenerationEval:  # fmt: skip
    """Sample under ``v``, replay teacher-forced, and measure KL, coherence and behaviour.

    Parameters
    ----------
    model, prompts, v, layer, positions, attention_mask, max_new_tokens, temperature, seed :
        As :func:`generate_steered`.
    num_samples : int
        Continuations per prompt ``S``.
    others : dict of str -> vector (d,), optional
        Further vectors whose per-step KL on the same continuations is reported (e.g. the
        sharp-removed vector and the sharp part alone).
    decode : callable, optional
        ``token ids (N,) -> str``.
    scorer : callable, optional
        ``list of str -> probabilities (n,)`` (e.g. :meth:`.BowScorer.score`).

    Returns
    -------
    GenerationEval
    """
    dim, layer, positions, ids, mask = _check_gen_args(model, prompts, attention_mask, layer,
                                                       positions)  # fmt: skip
    v = _check_vector(v, dim)
    s = check_int(num_samples, "num_samples", min=1, max=1024)
    others = {} if others is None else others
    if not isinstance(others, dict):
        raise TypeError("others must be a dict name -> vector")
    others = {str(k): _check_vector(u, dim, name="others") for k, u in others.items()}
    if decode is not None and not callable(decode):
        raise TypeError("decode must be callable")
    if scorer is not None and not callable(scorer):
        raise TypeError("scorer must be callable")
    ids = ids.repeat_interleave(s, 0)
    mask = torch.ones_like(ids) if mask is None else mask.repeat_interleave(s, 0)
    new = generate_steered(model, ids, v, layer=layer, positions=positions,
                           attention_mask=mask, max_new_tokens=max_new_tokens,
                           temperature=temperature, seed=seed)  # fmt: skip
    t0, n = ids.shape[1], new.shape[1]
    seq = torch.cat([ids, new], 1)
    full_mask = torch.cat([mask, torch.ones_like(new)], 1)
    where = "all" if positions == "all" else t0 - 1  # the positions generation steered

    def logp(u):
        if u is None:
            logits = _logits(model, seq, full_mask)
        else:
            with steer(model, u, layer=layer, positions=where):
                logits = _logits(model, seq, full_mask)
        return torch.log_softmax(logits[:, t0 - 1: t0 - 1 + n].double(), -1)  # (B, N, V)

    base = logp(None)
    nll = -base.gather(2, new[:, :, None]).squeeze(2)  # (B, N)
    kl = {}
    for name, u in {"self": v, **others}.items():
        lp = logp(u)
        kl[name] = (lp.exp() * (lp - base)).sum(-1).mean(0).cpu().numpy()  # Eq. (6), (N,)
    new = new.cpu()
    texts = tuple(decode(row) for row in new.numpy()) if decode is not None else ()
    behaviour = float(np.mean(scorer(list(texts)))) if (scorer is not None and texts) else (
        float("nan"))  # fmt: skip
    return GenerationEval(new.numpy(), kl, float(nll.mean()), behaviour, texts)
