"""ANN-to-SNN conversion of a causal LM's linear layers into TTFS neuron layers.

A *site* is one set of neurons: the input of one or several ``nn.Linear`` that read the
same tensor (a gated MLP's ``gate_proj`` and ``up_proj`` read one input; ``down_proj``
another; with ``targets="all"`` also the attention's ``q/k/v_proj`` and ``o_proj``).
Conversion wraps each of those linears in a :class:`TTFSLinear`: the linear then receives
the values its site's TTFS neurons transmit, simulated spike by spike (``mode="snn"``) or
fake-quantized (``mode="ann"``), the two equal bit for bit.

QC-A2S (:func:`convert_qc_a2s`) is static quantization made spiking:

1. two streamed float passes over calibration sequences record, per site, each input
   channel's largest magnitude, then a histogram of every value, raw and smoothed
   (:func:`calibration_stats`; computed once and reused for every ``T``);
2. optional SmoothQuant migration: per channel ``s_j = max|X_j|^a / max|W_j|^(1-a)``
   (:func:`smooth_scales`). In an SNN it costs nothing: neuron ``j`` gets the threshold
   ``theta s_j``, which is the same as quantizing ``X_j / s_j`` with ``theta`` and
   multiplying ``s_j`` back into the weights, without touching a weight;
3. per site, the clip ``theta`` minimising the quantization MSE of ``X / s`` over every
   calibration token at the target ``T`` (:func:`histogram_theta`; candidates are the
   histogram's percentiles and every channel's maximum), with the
   discretization-compatible neuron.

The continuous-time baseline (:func:`convert_continuous_baseline`) clips at the largest
observed magnitude, uses the naive (floor) neuron and no smoothing: lossless only as
``T -> infinity``. Latency: ``T`` steps per spiking stage, the sites of the network being
layer-pipelined stages, so ``latency_steps = T x num_stages``.

Non-spiking parts (stated scope): RMSNorm, softmax, the activation function, residual
additions and the ``QK^T`` / ``AV`` products stay in floating point.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
import torch
from sklearn.base import BaseEstimator
from torch import nn

from neurips26.common.models.llm import check_attention_mask, decoder_layers, token_inputs
from neurips26.common.validation import check_bool, check_choice, check_float, check_int, check_seed

from .ttfs import MAX_STEPS, _grid, _levels, _value, as_float_tensor, calibrate_theta, ttfs_encode

MODES = ("float", "ann", "snn")
TARGETS = ("mlp", "all")
#: ``"mse"``: the MSE-best clip over every calibration token (a streamed histogram; its
#: candidates are the histogram's percentiles and every channel's streamed maximum);
#: ``"max"``: the largest magnitude on every calibration token (the no-calibration
#: ablation); ``"mse_subsample"``: the MSE-best clip among percentiles of a uniform
#: subsample of the values (the earlier reading, kept as a diagnostic: a subsample misses
#: rare massive activations).
CLIPS = ("mse", "max", "mse_subsample")
#: Bins per octave and octaves below the site's largest magnitude of the streamed
#: calibration histogram (values below the last bin share one underflow bin).
HIST_BINS_PER_OCTAVE = 32
HIST_OCTAVES = 32
#: Most calibration values kept per site.
MAX_SAMPLES = 10**7


def _is_conv1d(module) -> bool:
    """A transformers ``Conv1D`` (GPT-2): ``y = x W + b``, ``W`` of shape (in, out)."""
    w = getattr(module, "weight", None)
    return (type(module).__name__ == "Conv1D" and isinstance(w, torch.Tensor) and w.ndim == 2
            and getattr(module, "nf", None) == w.shape[1])  # fmt: skip


def _is_map(module) -> bool:
    return isinstance(module, nn.Linear) or _is_conv1d(module)


def _in_out(module) -> tuple[int, int]:
    w = module.weight
    return (w.shape[0], w.shape[1]) if _is_conv1d(module) else (w.shape[1], w.shape[0])


def _weight_absmax(module) -> torch.Tensor:
    """``max_i |W_ij|`` per input channel ``j`` (a Conv1D's weight is stored transposed)."""
    return module.weight.detach().abs().amax(1 if _is_conv1d(module) else 0)


#: The layouts :func:`find_sites` knows (named in its errors).
SUPPORTED = ("LLaMA / Qwen2 / Mistral / Gemma (mlp.{gate,up,down}_proj, self_attn.{q,k,v,o}_proj "
             "nn.Linear) and GPT-2 (mlp.c_fc/c_proj, attn.c_attn/c_proj Conv1D); with "
             "targets='all', any nn.Linear inside a decoder layer")


class TTFSLinear(nn.Module):
    """An ``nn.Linear`` whose input is carried by a layer of discrete TTFS neurons.

    Parameters
    ----------
    linear : nn.Linear
        The wrapped layer (its weights are shared, not copied).
    theta : float or Tensor, shape () or (in_features,)
        Threshold(s) ``theta`` of the input neurons.
    num_steps : int
        ``T``.
    signed, compatible : bool
        As in :func:`ttfs_quantize`.
    mode : {"ann", "snn", "float"}
        Fake quantization, step-by-step spike simulation, or the float layer.
    site : str
        Name of the neuron site (used in error messages and statistics).
    count_spikes : bool
        Count this site's spikes here (``False`` on all but one linear of a shared site,
        so a neuron feeding ``gate_proj`` and ``up_proj`` is counted once).

    Attributes
    ----------
    num_spikes, num_neurons, max_spikes, synaptic_ops, dense_macs : int
        Running counts since :meth:`reset_counts` (neurons are neuron-windows: one per
        input value; synaptic operations are spikes times fan-out).

    Examples
    --------
    >>> from neurips26.papers.qc_a2s import ttfs_quantize
    >>> lin = nn.Linear(3, 2)
    >>> t = TTFSLinear(lin, theta=1.0, num_steps=8)
    >>> x = torch.tensor([[0.2, -0.5, 0.9]])
    >>> bool((t(x) == lin(ttfs_quantize(x, theta=1.0, num_steps=8))).all())
    True
    """

    def __init__(self, linear: nn.Linear, *, theta=1.0, num_steps: int = 16, signed: bool = True,
                 compatible: bool = True, mode: str = "ann", site: str = "",
                 count_spikes: bool = True) -> None:  # fmt: skip
        super().__init__()
        if not _is_map(linear):
            raise TypeError(f"linear must be an nn.Linear or a transformers Conv1D, got "
                            f"{type(linear).__name__}")  # fmt: skip
        self.linear = linear
        self.in_features, self.out_features = _in_out(linear)
        self.site = str(site)
        self.count_spikes = check_bool(count_spikes, "count_spikes")
        self.register_buffer("theta", torch.tensor(1.0))
        self.configure(theta=theta, num_steps=num_steps, signed=signed, compatible=compatible)
        self.mode = check_choice(mode, "mode", MODES)
        self.reset_counts()

    def configure(self, *, theta, num_steps: int, signed: bool = True,
                  compatible: bool = True) -> None:  # fmt: skip
        """Set the neurons' thresholds, window and kind (validated)."""
        w = self.linear.weight
        th = as_float_tensor(theta, "theta").to(device=w.device, dtype=w.dtype)
        if th.shape not in ((), (self.in_features,)):
            raise ValueError(f"theta: expected a scalar or shape ({self.in_features},), "
                             f"got {tuple(th.shape)}")  # fmt: skip
        if not bool(torch.isfinite(th).all()) or not bool((th > 0).all()):
            raise ValueError("theta must be finite and > 0 (in the layer's dtype)")
        num_steps = check_int(num_steps, "num_steps", min=1, max=MAX_STEPS)
        compatible = check_bool(compatible, "compatible")
        self.theta = th
        self.num_steps = int(num_steps)
        self.signed = check_bool(signed, "signed")
        self.compatible = bool(compatible)

    def reset_counts(self) -> None:
        """Zero the spike and operation counters."""
        self.num_spikes = 0
        self.num_neurons = 0
        self.max_spikes = 0
        self.synaptic_ops = 0
        self.dense_macs = 0

    def neurons(self, x: torch.Tensor) -> torch.Tensor:
        """What the neurons transmit for input ``x`` (the quantized input), counted.

        Raises
        ------
        ValueError
            Non-finite activations (naming the site) or a wrong last dimension.
        """
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
        if x.ndim == 0 or x.shape[-1] != self.in_features:
            raise ValueError(f"x: expected a last dimension of {self.in_features}, got "
                             f"shape {tuple(x.shape)}")  # fmt: skip
        if self.mode == "float":
            return x
        if not x.is_floating_point():
            raise TypeError(f"x must be a floating tensor, got {x.dtype}")
        if not bool(torch.isfinite(x).all()):
            raise ValueError(f"activations x of {self.site or 'this layer'}: non-finite input "
                             "to the TTFS neurons")  # fmt: skip
        if x.numel() == 0:
            return x
        th, step, b0, T, comp = _grid(x, self.theta, self.num_steps, self.compatible)
        if self.mode == "snn":  # step-by-step simulation, spike events decoded by Eq. (2)
            spikes = ttfs_encode(x, theta=th, num_steps=T, signed=self.signed, compatible=comp)
            level = torch.where(spikes.times >= 0, T - spikes.times, 0) * spikes.polarity
            fired, most = spikes.counts.sum(), spikes.counts.max()
        else:  # fake quantization (closed form settled by the firing test)
            if self.signed:
                level = torch.sign(x).to(torch.int64) * _levels(x.abs(), th, step, b0, T, comp)
            else:
                level = _levels(x, th, step, b0, T, comp)
            fired, most = (level != 0).sum(), (level != 0).max()
        n = int(fired)
        if self.count_spikes:
            self.num_spikes += n
            self.num_neurons += x.numel()
            self.max_spikes = max(self.max_spikes, int(most))
        self.synaptic_ops += n * self.out_features  # each spike drives its fan-out
        self.dense_macs += x.numel() * self.out_features
        return _value(level, step)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = getattr(self.linear, "weight", None)
        if (isinstance(x, torch.Tensor) and isinstance(w, torch.Tensor)
                and x.is_floating_point() and x.dtype != w.dtype):
            raise TypeError(f"x: expected {w.dtype} like the layer's weight at {self.site!r}, "
                            f"got {x.dtype}")
        return self.linear(self.neurons(x))

    def extra_repr(self) -> str:
        return (f"site={self.site!r}, num_steps={self.num_steps}, mode={self.mode!r}, "
                f"compatible={self.compatible}, signed={self.signed}")  # fmt: skip


# --------------------------------------------------------------------------- sites


def find_sites(model: nn.Module, targets: str = "mlp") -> dict[str, tuple[str, ...]]:
    """The neuron sites of a causal LM: site name -> qualified names of its linears.

    Gated-MLP layouts (LLaMA, Qwen2, Mistral, Gemma): ``layers.{i}.mlp.in``
    (``gate_proj``, ``up_proj``) and ``layers.{i}.mlp.down``; with ``targets="all"``
    also ``layers.{i}.attn.in`` (``q/k/v_proj``) and ``layers.{i}.attn.out``
    (``o_proj``). GPT-2 (``Conv1D`` maps): ``mlp.in`` (``c_fc``), ``mlp.down``
    (``mlp.c_proj``), and with ``targets="all"`` ``attn.in`` (``c_attn``) and
    ``attn.out`` (``attn.c_proj``). Other blocks: every ``nn.Linear`` inside a decoder
    layer is its own site (``targets="all"`` only). Sites are listed in forward order.

    Raises
    ------
    ValueError
        No decoder layers, or no linear to convert, naming ``model`` and the supported
        architectures.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch nn.Module, got {type(model).__name__}")
    targets = check_choice(targets, "targets", TARGETS)
    try:
        layers = decoder_layers(model)
    except ValueError as exc:
        raise ValueError(f"model: no decoder layers to convert ({exc}); supported: "
                         f"{SUPPORTED}") from exc
    names = {id(m): n for n, m in model.named_modules()}
    out: dict[str, tuple[str, ...]] = {}

    def lin(parent, attr):
        m = getattr(parent, attr, None) if parent is not None else None
        if isinstance(m, TTFSLinear):
            m = m.linear
        return m if _is_map(m) else None

    def qual(parent, attr):
        return names[id(getattr(parent, attr))]

    for i, layer in enumerate(layers):
        attn, mlp = getattr(layer, "self_attn", None), getattr(layer, "mlp", None)
        gated = all(lin(mlp, f"{k}_proj") is not None for k in ("gate", "up", "down"))
        qkvo = all(lin(attn, f"{k}_proj") is not None for k in ("q", "k", "v", "o"))
        if targets == "all" and qkvo:
            out[f"layers.{i}.attn.in"] = tuple(qual(attn, f"{k}_proj") for k in "qkv")
            out[f"layers.{i}.attn.out"] = (qual(attn, "o_proj"),)
        if gated:
            out[f"layers.{i}.mlp.in"] = (qual(mlp, "gate_proj"), qual(mlp, "up_proj"))
            out[f"layers.{i}.mlp.down"] = (qual(mlp, "down_proj"),)
        gattn = getattr(layer, "attn", None)  # GPT-2: Conv1D maps
        gpt2 = (lin(mlp, "c_fc") is not None and lin(mlp, "c_proj") is not None
                and lin(gattn, "c_attn") is not None and lin(gattn, "c_proj") is not None)
        if gpt2:
            if targets == "all":
                out[f"layers.{i}.attn.in"] = (qual(gattn, "c_attn"),)
                out[f"layers.{i}.attn.out"] = (qual(gattn, "c_proj"),)
            out[f"layers.{i}.mlp.in"] = (qual(mlp, "c_fc"),)
            out[f"layers.{i}.mlp.down"] = (qual(mlp, "c_proj"),)
            continue
        if targets == "all" and not (gated and qkvo):
            for n, m in layer.named_modules():
                if isinstance(m, nn.Linear) and not isinstance(m, TTFSLinear):
                    q = names[id(m)]
                    if not any(q in v for v in out.values()):
                        out[f"layers.{i}.{n}"] = (q,)
    if not out:
        raise ValueError(f"model: {type(model).__name__} has no linear map to convert with "
                         f"targets={targets!r}; supported: {SUPPORTED}")  # fmt: skip
    return out


def _get(model: nn.Module, qualname: str) -> nn.Module:
    return model.get_submodule(qualname)


def _set(model: nn.Module, qualname: str, module: nn.Module) -> None:
    parent, _, attr = qualname.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, attr, module)


def _linear(model, qualname) -> nn.Module:
    m = _get(model, qualname)
    return m.linear if isinstance(m, TTFSLinear) else m


def ttfs_layers(model: nn.Module) -> list[TTFSLinear]:
    """The :class:`TTFSLinear` modules of a converted model, in module order."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch nn.Module, got {type(model).__name__}")
    return [m for m in model.modules() if isinstance(m, TTFSLinear)]


def set_mode(model: nn.Module, mode: str) -> None:
    """Switch every :class:`TTFSLinear` of ``model`` to ``"ann"``, ``"snn"`` or ``"float"``."""
    mode = check_choice(mode, "mode", MODES)
    layers = ttfs_layers(model)
    if not layers:
        raise ValueError("model: has no TTFSLinear layers (convert it first)")
    for m in layers:
        m.mode = mode


def restore(model: nn.Module) -> nn.Module:
    """Unwrap every :class:`TTFSLinear` (in place); the float model is back."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch nn.Module, got {type(model).__name__}")
    for name, m in list(model.named_modules()):
        if isinstance(m, TTFSLinear):
            _set(model, name, m.linear)
    return model


@contextlib.contextmanager
def _float_mode(model):
    layers = ttfs_layers(model)
    modes = [m.mode for m in layers]
    for m in layers:
        m.mode = "float"
    try:
        yield
    finally:
        for m, mode in zip(layers, modes, strict=True):
            m.mode = mode


# --------------------------------------------------------------------------- calibration


@dataclass(frozen=True)
class SiteStats:
    """Calibration statistics of one site.

    Attributes
    ----------
    absmax : Tensor, shape (C,)
        ``max |X_j|`` per input channel over all calibration tokens.
    weight_absmax : Tensor, shape (C,)
        ``max |W_ij|`` per input channel over the site's linears (SmoothQuant).
    values : Tensor, shape (S,)
        A seeded uniform subsample of the site's input values.
    channels : LongTensor, shape (S,)
        The channel of each sampled value.
    hist : Tensor, shape (2, 2, 3, K + 1), float64, or None
        Histogram of every calibration value (streamed, nothing subsampled), in the raw
        domain ``|X_j|`` (index 0) and the smoothed domain ``|X_j / s_j|`` (index 1), for
        negative (0) and positive (1) values: count, sum and sum of squares of the
        magnitudes per bin. Bin ``k < K`` holds ``(top 2^-(k+1)/b, top 2^-k/b]`` (``b``
        bins per octave), bin ``K`` everything below.
    hist_top : Tensor, shape (2,), or None
        The top edge ``top`` of each domain (its largest magnitude).
    """

    absmax: torch.Tensor
    weight_absmax: torch.Tensor
    values: torch.Tensor
    channels: torch.Tensor
    hist: torch.Tensor | None = None
    hist_top: torch.Tensor | None = None


@dataclass(frozen=True)
class CalibrationStats:
    """Per-site statistics of one float pass over calibration sequences (reusable for any T).

    Attributes
    ----------
    sites : dict of str to tuple of str
        As :func:`find_sites`.
    stats : dict of str to SiteStats
    num_tokens : int
    targets : str
    smooth_alpha : float or None
        The SmoothQuant strength of the histograms' smoothed domain.
    bins_per_octave : int
        Resolution of the histograms.
    """

    sites: dict[str, tuple[str, ...]]
    stats: dict[str, SiteStats]
    num_tokens: int
    targets: str
    smooth_alpha: float | None = None
    bins_per_octave: int = HIST_BINS_PER_OCTAVE


def _check_ids(calib, model) -> torch.Tensor:
    if isinstance(calib, torch.Tensor):
        ids = calib
    else:
        if calib is None or isinstance(calib, (str, bytes)):
            raise TypeError(f"calib must be a (B, L) array of token ids, got "
                            f"{type(calib).__name__}")  # fmt: skip
        try:
            arr = np.asarray(calib)
        except ValueError as exc:
            raise ValueError(f"calib: sequences of different lengths ({exc})") from exc
        if arr.dtype == object:
            raise ValueError("calib: sequences of different lengths or non-numbers")
        ids = torch.as_tensor(arr)
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise TypeError(f"calib must hold integer token ids, got {ids.dtype}")
    if ids.ndim != 2 or ids.numel() == 0:
        raise ValueError(f"calib must be a non-empty (B, L) array of token ids, got shape "
                         f"{tuple(ids.shape)}")  # fmt: skip
    vocab = getattr(getattr(model, "config", None), "vocab_size", None)
    if int(ids.min()) < 0 or (vocab is not None and int(ids.max()) >= vocab):
        raise ValueError(f"calib: token ids must lie in [0, {vocab})")
    return ids.long()


def _forward(model, ids, mask=None):
    if not hasattr(model, "config"):
        return model(ids)
    return model(input_ids=ids) if mask is None else model(input_ids=ids, attention_mask=mask)


@torch.no_grad()
def calibration_stats(model: nn.Module, calib, *, targets: str = "mlp", batch_size: int = 8,
                      max_samples: int = 32768, seed: int = 0, attention_mask=None,
                      smooth_alpha: float | None = 0.5) -> CalibrationStats:  # fmt: skip
    """Two streamed float passes over ``calib`` recording every site's input statistics.

    The first pass streams each channel's largest magnitude (and keeps a seeded uniform
    subsample of the values, for the equivalence checks and the subsample diagnostic);
    the second streams a log-binned histogram of every value, raw and divided by the
    SmoothQuant scales of ``smooth_alpha`` (which need the first pass's maxima). The MSE
    clip of :func:`convert_qc_a2s` is read from these histograms, so it sees every
    calibration token, massive activations included.

    Parameters
    ----------
    model : causal LM (Hugging Face layout, see :func:`find_sites`)
    calib : LongTensor or array, shape (B, L), or a tokenizer output
        Calibration token ids, or a ``BatchEncoding`` / dict with ``input_ids`` and
        ``attention_mask``; padded positions (mask 0) are run but never recorded.
    targets : {"mlp", "all"}
    batch_size : int
        Sequences per forward.
    max_samples : int
        Values subsampled per site (uniform, seeded).
    seed : int
    attention_mask : 0/1 array (B, L), optional
        For padded id arrays (a tokenizer output brings its own).
    smooth_alpha : float in [0, 1] or None
        SmoothQuant strength of the histograms' smoothed domain (``None``: raw only).

    Returns
    -------
    CalibrationStats

    Raises
    ------
    ValueError
        Empty or ragged ``calib``, ids outside the vocabulary, a model without sites,
        non-finite activations (naming the site).
    """
    sites = find_sites(model, targets)
    raw, raw_mask = token_inputs(calib, "calib", attention_mask=attention_mask)
    ids = _check_ids(raw, model)
    mask = check_attention_mask(raw_mask, ids)
    check_int(batch_size, "batch_size", min=1, max=1 << 20)
    check_int(max_samples, "max_samples", min=1, max=MAX_SAMPLES)
    if smooth_alpha is not None:
        smooth_alpha = check_float(smooth_alpha, "smooth_alpha", min=0.0, max=1.0)
    gen = torch.Generator().manual_seed(check_seed(seed))
    total = ids.numel() if mask is None else int(mask.sum())
    bpo, nbin = HIST_BINS_PER_OCTAVE, HIST_BINS_PER_OCTAVE * HIST_OCTAVES
    current: dict = {}  # the running batch's mask, flattened
    absmax: dict[str, torch.Tensor] = {}
    vals: dict[str, list] = {s: [] for s in sites}
    chans: dict[str, list] = {s: [] for s in sites}
    hist: dict[str, torch.Tensor] = {}
    scales: dict[str, torch.Tensor] = {}
    tops: dict[str, torch.Tensor] = {}

    def record_max(site, flat):
        m = flat.abs().amax(0)
        absmax[site] = m if site not in absmax else torch.maximum(absmax[site], m)
        n = max(1, round(max_samples * flat.shape[0] / total))
        r = torch.randint(flat.shape[0], (n,), generator=gen)
        c = torch.randint(flat.shape[1], (n,), generator=gen)
        vals[site].append(flat[r, c])
        chans[site].append(c)

    def record_hist(site, flat):
        pos = (flat > 0).reshape(-1).long()
        out = hist.setdefault(site, torch.zeros(2, 2, 3, nbin + 1, dtype=torch.float64))
        for d, div in enumerate((None, scales[site])):
            mag = (flat.abs() if div is None else flat.abs() / div).reshape(-1).double()
            idx = torch.floor(-torch.log2(mag / tops[site][d]) * bpo)
            idx = idx.nan_to_num(nbin, nbin, 0).clamp(0, nbin).long() + pos * (nbin + 1)
            for k, w in enumerate((None, mag, mag * mag)):
                cnt = torch.bincount(idx, weights=w, minlength=2 * (nbin + 1))
                out[d, :, k] += cnt.double().reshape(2, nbin + 1)

    def hook_for(site, record):
        def hook(_mod, args):
            x = args[0].detach()
            if not bool(torch.isfinite(x).all()):
                raise ValueError(f"activations: non-finite input to {site} during calibration")
            # statistics in float32, or float64 for a float64 model (never below float32)
            flat = x.reshape(-1, x.shape[-1]).to(torch.promote_types(x.dtype, torch.float32))
            flat = flat.cpu()  # (N, C)
            if current.get("keep") is not None:
                flat = flat[current["keep"]]  # real tokens only
            if flat.shape[0]:
                record(site, flat)

        return hook

    def stream(record):
        handles = [_get(model, names[0]).register_forward_pre_hook(hook_for(s, record))
                   for s, names in sites.items()]  # fmt: skip
        was_training = model.training
        model.eval()
        try:
            with _float_mode(model):
                for start in range(0, ids.shape[0], batch_size):
                    rows = slice(start, start + batch_size)
                    bm = None if mask is None else mask[rows]
                    current["keep"] = None if bm is None else bm.reshape(-1)
                    _forward(model, ids[rows].to(_device(model)),
                             None if bm is None else bm.long().to(_device(model)))
        finally:
            for h in handles:
                h.remove()
            model.train(was_training)

    stream(record_max)
    stats = {}
    for s, names in sites.items():
        w = torch.stack([_weight_absmax(_linear(model, n)).to(absmax[s].dtype).cpu()
                         for n in names]).amax(0)  # fmt: skip
        stats[s] = SiteStats(absmax=absmax[s], weight_absmax=w, values=torch.cat(vals[s]),
                             channels=torch.cat(chans[s]))  # fmt: skip
        scales[s] = (torch.ones_like(absmax[s]) if smooth_alpha is None
                     else smooth_scales(stats[s], smooth_alpha))  # fmt: skip
        top = torch.stack([absmax[s].max(), (absmax[s] / scales[s]).max()]).double()
        tops[s] = top.clamp(min=torch.finfo(torch.float64).tiny)
    stream(record_hist)
    stats = {s: dataclasses.replace(st, hist=hist[s], hist_top=tops[s])
             for s, st in stats.items()}  # fmt: skip
    return CalibrationStats(sites=sites, stats=stats, num_tokens=total, targets=targets,
                            smooth_alpha=smooth_alpha, bins_per_octave=bpo)  # fmt: skip


def _device(model):
    p = next(model.parameters(), None)
    return p.device if p is not None else torch.device("cpu")


def smooth_scales(stats: SiteStats, alpha: float) -> torch.Tensor:
    """SmoothQuant's migration scales ``s_j = max|X_j|^alpha / max|W_j|^(1 - alpha)``.

    Parameters
    ----------
    stats : SiteStats
    alpha : float in [0, 1]
        Migration strength ``alpha``.

    Returns
    -------
    Tensor, shape (C,)
        Positive scales (magnitudes floored at 1e-5).

    Examples
    --------
    >>> st = SiteStats(torch.tensor([4.0, 1.0]), torch.tensor([1.0, 1.0]),
    ...                torch.zeros(1), torch.zeros(1, dtype=torch.long))
    >>> smooth_scales(st, 0.5)
    tensor([2., 1.])
    """
    if not isinstance(stats, SiteStats):
        raise TypeError(f"stats must be a SiteStats, got {type(stats).__name__}")
    alpha = check_float(alpha, "alpha", min=0.0, max=1.0)
    x = stats.absmax.clamp(min=1e-5)
    w = stats.weight_absmax.clamp(min=1e-5)
    return x**alpha / w ** (1.0 - alpha)  # SmoothQuant, Eq. (4) of Xiao et al.


def histogram_theta(hist: torch.Tensor, top, *, num_steps: int, signed: bool = True,
                    compatible: bool = True, bins_per_octave: int = HIST_BINS_PER_OCTAVE,
                    candidates=None, percentiles=None) -> float:  # fmt: skip
    """The MSE-best clip ``theta`` of a static (TTFS) quantizer from a streamed histogram.

    The candidates are percentiles of the histogrammed magnitudes (each read as the upper
    edge of the bin where the cumulative count reaches it, capped at ``top``), ``top``
    itself and any extra ``candidates`` (e.g. every channel's streamed maximum). The
    error of a candidate sums, per bin, ``n (q(mu) - mu)^2 + n var`` (every value of the
    bin on its mean's level: exact for a clipped bin), or ``n step^2 / 12`` (``/ 3`` for
    the floor neuron) for a bin wider than a quantization step.

    Parameters
    ----------
    hist : Tensor, shape (2, 3, K + 1)
        For negative and positive values, count, sum and sum of squares of the magnitudes
        per bin (bin ``k < K``: ``(top 2^-(k+1)/b, top 2^-k/b]``; bin ``K``: below).
    top : float
        Largest magnitude (the top edge), > 0.
    num_steps : int
        ``T``.
    signed, compatible : bool
        The quantizer (:func:`ttfs_quantize`); unsigned: negative values' error does not
        depend on the clip and is left out.
    bins_per_octave : int
        ``b``.
    candidates : Tensor or array, shape (M,), optional
        Extra candidate clips (non-positive ones and ones above ``top`` are dropped).
    percentiles : sequence of float in (0, 100], optional
        Default 90 to 100 in steps of 0.25 (as :func:`calibrate_theta`).

    Returns
    -------
    float

    Examples
    --------
    >>> h = torch.zeros(2, 3, 65, dtype=torch.float64)
    >>> h[1, :, 0] = torch.tensor([1.0, 8.0, 64.0])     # one value at the top, 8
    >>> h[1, :, 24] = torch.tensor([99.0, 99.0, 99.0])  # 99 values at 1
    >>> histogram_theta(h, 8.0, num_steps=4, bins_per_octave=8)  # clips the lone 8
    1.0
    >>> h[1, :, 0] = torch.tensor([50.0, 400.0, 3200.0])  # fifty at the top
    >>> histogram_theta(h, 8.0, num_steps=4, bins_per_octave=8)
    8.0
    """
    if not isinstance(hist, torch.Tensor):
        raise TypeError(f"hist must be a torch.Tensor, got {type(hist).__name__}")
    if hist.ndim != 3 or hist.shape[:2] != (2, 3) or hist.shape[2] < 2:
        raise ValueError(f"hist: expected shape (2, 3, K + 1), got {tuple(hist.shape)}")
    if hist.is_complex():
        raise TypeError("hist must be a real tensor")
    h = hist.detach().double().cpu()
    if not bool(torch.isfinite(h).all()) or bool((h[:, 0] < 0).any()):
        raise ValueError("hist: counts must be finite and >= 0")
    top = check_float(top, "top", min=0.0)
    if not (math.isfinite(top) and top > 0):
        raise ValueError(f"top must be finite and > 0, got {top}")
    T = check_int(num_steps, "num_steps", min=1, max=MAX_STEPS)
    signed, compatible = check_bool(signed, "signed"), check_bool(compatible, "compatible")
    bpo = check_int(bins_per_octave, "bins_per_octave", min=1, max=1 << 12)
    nbin = h.shape[2] - 1
    negatives = float(h[0, 0].sum())
    h = h.sum(0) if signed else h[1]  # (3, K + 1)
    n, sm, sq = h[0], h[1], h[2]
    if not float(n.sum()) > 0:
        raise ValueError("hist: no value to calibrate a clip on")
    k = torch.arange(nbin + 1, dtype=torch.float64)
    upper = top * torch.exp2(-k / bpo)  # (K + 1,) upper edges
    lower = torch.where(k < nbin, top * torch.exp2(-(k + 1) / bpo), torch.zeros(()))
    # percentiles of |x| (unsigned: negatives count as zeros) from the low end upwards
    count = n.flip(0).cumsum(0)  # ascending magnitude
    total = float(count[-1]) + (0.0 if signed else negatives)
    if percentiles is None:
        percentiles = np.linspace(90.0, 100.0, 41)
    p = as_float_tensor(percentiles, "percentiles").double().cpu()
    if p.ndim != 1 or bool((p <= 0).any()) or bool((p > 100).any()):
        raise ValueError("percentiles must be a 1-D sequence in (0, 100]")
    offset = total - float(count[-1])  # the unsigned reading's zeros
    pos = torch.searchsorted(count, (p / 100 * total - offset).clamp(min=0))
    cands = upper.flip(0)[pos.clamp(max=nbin)]
    if candidates is not None:
        extra = as_float_tensor(candidates, "candidates").double().cpu().flatten()
        cands = torch.cat([cands, extra[(extra > 0) & (extra <= top)]])
    cands = torch.unique(torch.cat([cands, torch.tensor([top], dtype=torch.float64)]))
    cands = cands[cands > 0]
    live = n > 0
    n, sm, sq, width = n[live], sm[live], sq[live], (upper - lower)[live]
    mu = sm / n
    var = (sq / n - mu * mu).clamp(min=0)
    errs = []
    for chunk in torch.split(cands, max(1, 4_000_000 // max(1, len(n)))):
        c = chunk[:, None]  # (M, 1)
        step = c / T
        u = mu[None, :] / step
        q = (torch.floor(u + 0.5) if compatible else torch.floor(u)).clamp(0, T) * step
        exact = n * ((q - mu) ** 2 + var)
        spread = n * step**2 / (12.0 if compatible else 3.0)
        wide = (width[None, :] > step) & (mu[None, :] < c)
        errs.append(torch.where(wide, spread, exact).sum(1))
    err = torch.cat(errs)
    return float(cands[int(torch.argmin(err))])  # the smallest clip on exact ties


# --------------------------------------------------------------------------- conversion


@dataclass(frozen=True)
class ConversionResult:
    """A converted model and what was chosen for it.

    Attributes
    ----------
    model : nn.Module
        The model, converted in place (its linears are :class:`TTFSLinear`).
    thetas : dict of str to Tensor
        Per site, the neurons' thresholds (a scalar, or per channel with smoothing).
    num_steps : int
        ``T``.
    num_stages : int
        Spiking stages along the depth (one per site).
    latency_steps : int
        End-to-end time steps per token, ``T x num_stages`` (layer-pipelined windows).
    method : str
        ``"qc_a2s"`` or ``"continuous"``.
    compatible : bool
    clip : str
    smooth_alpha : float or None
    """

    model: nn.Module
    thetas: dict[str, torch.Tensor]
    num_steps: int
    num_stages: int
    latency_steps: int
    method: str
    compatible: bool
    clip: str
    smooth_alpha: float | None = None
    sites: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def set_mode(self, mode: str) -> None:
        """``"ann"`` (fake quantization), ``"snn"`` (spike simulation) or ``"float"``."""
        set_mode(self.model, mode)


def _convert(model, calib, *, num_steps, smooth_alpha, clip, compatible, targets, signed,
             max_samples, seed, method, attention_mask=None) -> ConversionResult:  # fmt: skip
    num_steps = check_int(num_steps, "num_steps", min=1, max=MAX_STEPS)
    compatible = check_bool(compatible, "compatible")
    signed = check_bool(signed, "signed")
    clip = check_choice(clip, "clip", CLIPS)
    if smooth_alpha is not None:
        smooth_alpha = check_float(smooth_alpha, "smooth_alpha", min=0.0, max=1.0)
    if isinstance(calib, CalibrationStats):
        if attention_mask is not None:
            raise ValueError("attention_mask: CalibrationStats were calibrated already")
        stats = calib
        find_sites(model, stats.targets)  # the model must still have them
        if targets != stats.targets:
            raise ValueError(f"targets: {targets!r} differs from the calibration's "
                             f"{stats.targets!r}")  # fmt: skip
    else:
        stats = calibration_stats(model, calib, targets=targets, max_samples=max_samples,
                                  seed=seed, attention_mask=attention_mask,
                                  smooth_alpha=smooth_alpha)  # fmt: skip
    if clip == "mse" and smooth_alpha is not None and smooth_alpha != stats.smooth_alpha:
        raise ValueError(f"smooth_alpha: {smooth_alpha} differs from the {stats.smooth_alpha} "
                         "the calibration histograms were streamed for; pass it to "
                         "calibration_stats")  # fmt: skip
    thetas = {}
    for site, names in stats.sites.items():
        st = stats.stats[site]
        if smooth_alpha is None:
            scale, samples = None, st.values
        else:
            scale = smooth_scales(st, smooth_alpha)  # (C,)
            samples = st.values / scale[st.channels]  # X_j / s_j
        if clip == "max":  # the largest magnitude seen on all calibration tokens
            top = st.absmax if scale is None else st.absmax / scale
            theta = float(top.max())
        elif clip == "mse_subsample":  # percentiles and MSE of the subsample only
            theta = calibrate_theta(samples, num_steps=num_steps, signed=signed,
                                    compatible=compatible, method="mse")  # fmt: skip
        else:  # every calibration token: the streamed histogram and channel maxima
            if st.hist is None or st.hist_top is None:
                raise ValueError(f"calib: the statistics of {site} carry no histogram "
                                 "(make them with calibration_stats)")  # fmt: skip
            d = 0 if scale is None else 1
            top = st.absmax if scale is None else st.absmax / scale
            theta = histogram_theta(st.hist[d], float(st.hist_top[d]), num_steps=num_steps,
                                    signed=signed, compatible=compatible,
                                    bins_per_octave=stats.bins_per_octave,
                                    candidates=top.double())  # fmt: skip
        if not theta > 0:
            raise ValueError(f"calib: the activations of {site} are all zero")
        th = torch.tensor(theta) if scale is None else theta * scale  # theta s_j per neuron
        thetas[site] = th
        for j, name in enumerate(names):
            m = _get(model, name)
            if isinstance(m, TTFSLinear):
                m.configure(theta=th, num_steps=num_steps, signed=signed, compatible=compatible)
                m.site, m.count_spikes = site, j == 0
                m.reset_counts()
            else:
                _set(model, name, TTFSLinear(m, theta=th, num_steps=num_steps, signed=signed,
                                             compatible=compatible, site=site,
                                             count_spikes=j == 0))  # fmt: skip
    n = len(stats.sites)
    return ConversionResult(model=model, thetas=thetas, num_steps=num_steps, num_stages=n,
                            latency_steps=num_steps * n, method=method, compatible=compatible,
                            clip=clip, smooth_alpha=smooth_alpha,
                            sites=dict(stats.sites))  # fmt: skip


def convert_qc_a2s(model: nn.Module, calib, *, num_steps: int = 16,
                   smooth_alpha: float | None = 0.5, clip: str = "mse", compatible: bool = True,
                   targets: str = "mlp", signed: bool = True, max_samples: int = 32768,
                   seed: int = 0, attention_mask=None) -> ConversionResult:  # fmt: skip
    """QC-A2S: calibrated static quantization carried by discretization-compatible TTFS neurons.

    Converts ``model`` in place (weights shared; :func:`restore` undoes it; calling it
    again on a converted model re-configures the neurons).

    Parameters
    ----------
    model : causal LM
        Hugging Face LLaMA/Qwen2/Mistral/Gemma layout (any model with decoder layers).
    calib : LongTensor (B, L) of token ids, a tokenizer output, or CalibrationStats
        Calibration sequences (ids, or a ``BatchEncoding`` / dict with ``input_ids`` and
        ``attention_mask``), or the statistics of an earlier pass (reused across T).
    num_steps : int
        ``T``.
    smooth_alpha : float in [0, 1] or None
        SmoothQuant migration strength; ``None``: no smoothing. With statistics from
        :func:`calibration_stats` and ``clip="mse"``, ``None`` or their ``smooth_alpha``.
    clip : {"mse", "max", "mse_subsample"}
        Calibrated clip (the paper's; MSE over every calibration token, from the streamed
        histograms, see :func:`histogram_theta`) or the largest magnitude (the ``no
        calibration`` ablation); ``"mse_subsample"`` calibrates on the uniform subsample
        only (a diagnostic of the subsample's blind spot for massive activations).
    compatible : bool
        ``b0 = theta/(2T)`` (the paper's) or ``b0 = 0`` (the ``floor`` ablation).
    targets : {"mlp", "all"}
        The MLP inputs only, or every linear of the blocks.
    signed : bool
    max_samples, seed : int
        Calibration subsample per site and its seed.
    attention_mask : 0/1 array (B, L), optional
        For padded id arrays: padding is never calibrated on.

    Returns
    -------
    ConversionResult

    Examples
    --------
    >>> from neurips26.common.models.llm import tiny_causal_lm
    >>> lm = tiny_causal_lm(seed=0)
    >>> ids = torch.randint(256, (2, 16), generator=torch.Generator().manual_seed(0))
    >>> res = convert_qc_a2s(lm, ids, num_steps=8)
    >>> res.num_stages, res.latency_steps
    (4, 32)
    """
    return _convert(model, calib, num_steps=num_steps, smooth_alpha=smooth_alpha, clip=clip,
                    compatible=compatible, targets=targets, signed=signed,
                    max_samples=max_samples, seed=seed, method="qc_a2s",
                    attention_mask=attention_mask)  # fmt: skip


def convert_continuous_baseline(model: nn.Module, calib, *, num_steps: int,
                                targets: str = "mlp", signed: bool = True,
                                max_samples: int = 32768, seed: int = 0,
                                attention_mask=None) -> ConversionResult:  # fmt: skip
    """Continuous-time TTFS conversion discretized naively: max clip, floor neuron, no smoothing.

    Lossless as ``T -> infinity`` (the assumption of continuous-time TTFS conversion);
    arguments as :func:`convert_qc_a2s`.

    Examples
    --------
    >>> from neurips26.common.models.llm import tiny_causal_lm
    >>> lm = tiny_causal_lm(seed=0)
    >>> ids = torch.randint(256, (2, 16), generator=torch.Generator().manual_seed(0))
    >>> convert_continuous_baseline(lm, ids, num_steps=64).compatible
    False
    """
    return _convert(model, calib, num_steps=num_steps, smooth_alpha=None, clip="max",
                    compatible=False, targets=targets, signed=signed,
                    max_samples=max_samples, seed=seed, method="continuous",
                    attention_mask=attention_mask)  # fmt: skip


class QCA2S(BaseEstimator):
    """Estimator form of :func:`convert_qc_a2s` (scikit-learn conventions).

    ``fit(model, calib)`` converts ``model`` in place and sets ``model_``, ``thetas_``,
    ``latency_steps_`` and ``result_``.

    Examples
    --------
    >>> from neurips26.common.models.llm import tiny_causal_lm
    >>> ids = torch.randint(256, (2, 16), generator=torch.Generator().manual_seed(0))
    >>> est = QCA2S(num_steps=4).fit(tiny_causal_lm(seed=0), ids)
    >>> sorted(est.thetas_)[:2]
    ['layers.0.mlp.down', 'layers.0.mlp.in']
    """

    def __init__(self, *, num_steps: int = 16, smooth_alpha: float | None = 0.5,
                 clip: str = "mse", compatible: bool = True, targets: str = "mlp",
                 max_samples: int = 32768, seed: int = 0) -> None:  # fmt: skip
        self.num_steps = num_steps
        self.smooth_alpha = smooth_alpha
        self.clip = clip
        self.compatible = compatible
        self.targets = targets
        self.max_samples = max_samples
        self.seed = seed

    def fit(self, model: nn.Module, calib, *, attention_mask=None) -> QCA2S:
        """Convert ``model`` from ``calib`` (ids, a tokenizer output or CalibrationStats)."""
        res = convert_qc_a2s(model, calib, num_steps=self.num_steps,
                             smooth_alpha=self.smooth_alpha, clip=self.clip,
                             compatible=self.compatible, targets=self.targets,
                             max_samples=self.max_samples, seed=self.seed,
                             attention_mask=attention_mask)  # fmt: skip
        self.result_ = res
        self.model_ = res.model
        self.thetas_ = res.thetas
        self.latency_steps_ = res.latency_steps
        return self


# --------------------------------------------------------------------------- statistics


@dataclass(frozen=True)
class SpikeStats:
    """Spike counts of a converted model since its counters were reset.

    Attributes
    ----------
    num_spikes, num_neurons : int
        Spikes and neuron-windows (one per transmitted value).
    spikes_per_neuron : float
        ``num_spikes / num_neurons`` (at most 1 for TTFS).
    max_spikes_per_neuron : int
        Most spikes any neuron emitted in one window.
    synaptic_ops : int
        Spikes times fan-out (accumulate operations of the receiving layers).
    dense_macs : int
        Multiply-accumulates of the same linears run densely (the ANN).
    per_site : dict of str to float
        Spikes per neuron by site.
    """

    num_spikes: int
    num_neurons: int
    spikes_per_neuron: float
    max_spikes_per_neuron: int
    synaptic_ops: int
    dense_macs: int
    per_site: dict[str, float]

    @property
    def sops_per_mac(self) -> float:
        """Synaptic operations per dense MAC (an energy proxy, no joules claimed)."""
        return self.synaptic_ops / self.dense_macs if self.dense_macs else math.nan


def spike_statistics(model: nn.Module, *, reset: bool = False) -> SpikeStats:
    """Collect the spike counters of every :class:`TTFSLinear` (``reset``: zero them after).

    Examples
    --------
    >>> lin = TTFSLinear(nn.Linear(4, 2), theta=1.0, num_steps=4)
    >>> _ = lin(torch.tensor([[0.0, 0.5, -0.9, 0.01]]))
    >>> s = spike_statistics(lin)
    >>> s.num_spikes, s.num_neurons, s.max_spikes_per_neuron
    (2, 4, 1)
    """
    reset = check_bool(reset, "reset")
    layers = ttfs_layers(model)
    if not layers:
        raise ValueError("model: has no TTFSLinear layers (convert it first)")
    spikes = sum(m.num_spikes for m in layers)
    neurons = sum(m.num_neurons for m in layers)
    per_site: dict[str, float] = {}
    for m in layers:
        if m.count_spikes and m.num_neurons:
            per_site[m.site] = m.num_spikes / m.num_neurons
    out = SpikeStats(num_spikes=spikes, num_neurons=neurons,
                     spikes_per_neuron=spikes / neurons if neurons else math.nan,
                     max_spikes_per_neuron=max(m.max_spikes for m in layers),
                     synaptic_ops=sum(m.synaptic_ops for m in layers),
                     dense_macs=sum(m.dense_macs for m in layers), per_site=per_site)  # fmt: skip
    if reset:
        for m in layers:
            m.reset_counts()
    return out
