"""Episode-by-episode evaluation of memory methods on a frozen causal LM.

Every episode is its own context window. All methods change only the top decoder layers
(from ``start`` on), so the residual stream entering layer ``start`` is a function of the
episode's tokens alone: :class:`EpisodeRunner` computes it once per distinct episode text
and runs only the top layers afterwards (exact, and what makes training on a 2-core CPU
possible). Methods (each a ``torch.nn.Module`` holding only its own trainable parts):

- :class:`FrozenReader`: the backbone, one window at a time (it never sees the fact);
- :class:`DeltaMemReader`: delta-Mem on the top layers, the state carried across episodes;
- :class:`LoRAReader`: LoRA (peft) on the same layers, no state across windows;
- :class:`MemoryTokensReader`: RMT-style memory tokens carried from episode to episode;
- :class:`RetrievalReader`: the most lexically similar past episode put into the window;
- :class:`InContextReader`: every episode in one window (an oracle, where it fits).

:func:`evaluate_episodes` scores any of them; :func:`fit_reader` trains the trainable ones
on next-token cross-entropy of the answer token, the backbone frozen.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from neurips26.common.models.llm import decoder_layers
from neurips26.common.train import train
from neurips26.common.validation import check_float, check_int, check_seed

from .memory import (
    DeltaMemConfig,
    attach_delta_mem,
    delta_mem_parameters,
    detach_delta_mem_state,
    reset_delta_mem,
    write_mask,
)
from .tasks import FAMILIES, Dialogue, lexical_retrieve


def encoded_ids(out, name: str = "encode") -> list[int]:
    """The token ids of one text from what a tokenizer returns.

    Accepts a list/tuple of ints, a 1-D (or ``(1, T)``) tensor or array, or a tokenizer's
    output (a ``BatchEncoding`` or dict with ``input_ids``), so ``encode`` may be a
    ``WordTokenizer.encode``, ``tokenizer.encode`` or a Hugging Face tokenizer itself.

    Examples
    --------
    >>> encoded_ids({"input_ids": [5, 6], "attention_mask": [1, 1]})
    [5, 6]
    >>> encoded_ids(torch.tensor([[7, 8]]))
    [7, 8]
    """
    if isinstance(out, Mapping):
        if "input_ids" not in out:
            raise ValueError(f"{name}: returned a mapping without 'input_ids' (keys "
                             f"{sorted(map(str, out))}); {_LAYOUTS}")  # fmt: skip
        out = out["input_ids"]
    if isinstance(out, (str, bytes)) or not isinstance(out, (list, tuple, torch.Tensor,
                                                             np.ndarray)):
        raise TypeError(f"{name}: returned {type(out).__name__}; {_LAYOUTS}")
    arr = out.detach().cpu().numpy() if isinstance(out, torch.Tensor) else np.asarray(
        out, dtype=object)  # fmt: skip
    if arr.ndim == 2 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim != 1 or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                for v in arr.tolist()):  # fmt: skip
        raise TypeError(f"{name}: expected the token ids of one text; {_LAYOUTS}")
    return [int(v) for v in arr.tolist()]


_LAYOUTS = ("supported: a list of int ids, a 1-D or (1, T) integer tensor/array, or a "
            "tokenizer output (BatchEncoding or dict with 'input_ids')")


def _base(model: nn.Module) -> nn.Module:
    layers = decoder_layers(model)
    for m in model.modules():
        if getattr(m, "layers", None) is layers:
            return m
    raise ValueError(f"model: cannot find the module that holds the decoder layers of "
                     f"{type(model).__name__}")  # fmt: skip


class EpisodeRunner:
    """Runs a causal LM's top layers on episodes, from cached layer-``start`` inputs.

    Parameters
    ----------
    model : Hugging Face causal LM (LLaMA, Qwen2 or Mistral layout), frozen here
    encode : callable str -> token ids
        The tokenizer (no special tokens): a list of ids, a tensor or array, or a
        tokenizer's output (``BatchEncoding``), see :func:`encoded_ids`.
    start : int
        First adapted decoder layer (``num_layers - num_top_layers``).
    window : int
        The context window: a longer episode raises ``ValueError``.
    batch_size : int
        Batch size of the precomputation.
    """

    def __init__(self, model: nn.Module, encode: Callable[[str], list[int]], *, start: int,
                 window: int = 64, batch_size: int = 32) -> None:  # fmt: skip
        if not isinstance(model, nn.Module):
            raise TypeError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
        if not callable(encode):
            raise TypeError(f"encode: expected a callable, got {type(encode).__name__}")
        if getattr(getattr(model, "config", None), "model_type", "") == "gemma":
            raise ValueError("model: Gemma scales its input embeddings inside the model, so "
                             "the top-layer runner cannot start mid-stack; use attach_delta_mem "
                             "on the full model instead")  # fmt: skip
        try:
            _base(model)
        except ValueError:
            raise ValueError(f"model: {type(model).__name__} keeps no decoder layers at "
                             "model.layers; the top-layer runner supports the LLaMA / Qwen2 / "
                             "Mistral layouts (GPT-2's fused attention is not supported by "
                             "delta-Mem)") from None  # fmt: skip
        self.model = model.eval().requires_grad_(False)
        self.layers = decoder_layers(model)
        n = len(self.layers)
        self.start = check_int(start, "start", min=1, max=n - 1)
        self.window = check_int(window, "window", min=2, max=1 << 16)
        self.batch_size = check_int(batch_size, "batch_size", min=1, max=1 << 16)
        self.encode = encode
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype  # the residual streams follow the model
        self._bank: dict[str, torch.Tensor] = {}
        self.head = model.get_output_embeddings()

    def top_layers(self) -> nn.ModuleList:
        """The frozen top layers (shared with the model)."""
        return nn.ModuleList(list(self.layers)[self.start:])

    def tokens(self, text: str) -> list[int]:
        ids = encoded_ids(self.encode(text))
        if not ids:
            raise ValueError(f"text: {text!r} encodes to no tokens")
        if len(ids) > self.window:
            raise ValueError(f"text: {len(ids)} tokens, longer than the window of {self.window}")
        return ids

    @torch.no_grad()
    def precompute(self, texts: Sequence[str]) -> None:
        """Residual streams entering layer ``start`` for every new text (cached)."""
        todo = sorted({t for t in texts if t not in self._bank})
        base = _base(self.model)
        saved = base.layers
        for i in range(0, len(todo), self.batch_size):
            chunk = todo[i:i + self.batch_size]
            ids = [self.tokens(t) for t in chunk]
            T = max(map(len, ids))
            x = torch.zeros(len(ids), T, dtype=torch.long)
            for j, s in enumerate(ids):
                x[j, : len(s)] = torch.tensor(s)
            got: dict[str, torch.Tensor] = {}

            def grab(_m, _i, o, got=got):
                got["h"] = o[0] if isinstance(o, tuple) else o

            hook = saved[self.start - 1].register_forward_hook(grab)
            base.layers = nn.ModuleList(list(saved)[: self.start])
            try:
                base(input_ids=x.to(self.device), use_cache=False)
            finally:
                base.layers = saved
                hook.remove()
            for j, t in enumerate(chunk):  # right padding: causal, so real tokens are exact
                self._bank[t] = got["h"][j, : len(ids[j])].detach().cpu()

    def batch(self, texts: Sequence[str], *, prefix: int = 0):
        """``(h (B, prefix + T, D), mask (B, prefix + T), last (B,))``, right-padded."""
        self.precompute(texts)
        hs = [self._bank[t] for t in texts]
        T = max(len(h) for h in hs)
        D = hs[0].shape[-1]
        h = torch.zeros(len(hs), prefix + T, D, dtype=self.dtype)
        mask = torch.zeros(len(hs), prefix + T)
        mask[:, :prefix] = 1.0
        for j, x in enumerate(hs):
            h[j, prefix: prefix + len(x)] = x
            mask[j, : prefix + len(x)] = 1.0
        last = mask.sum(1).long() - 1
        return h.to(self.device), mask.to(self.device), last.to(self.device)

    def run_top(self, h: torch.Tensor, layers: nn.ModuleList | None = None) -> torch.Tensor:
        """The final (normed) hidden states ``(B, T, D)`` from layer-``start`` inputs ``h``."""
        base = _base(self.model)
        saved = base.layers
        base.layers = nn.ModuleList(list(saved)[: 0] + list(layers or self.top_layers()))
        try:
            return base(inputs_embeds=h, use_cache=False).last_hidden_state
        finally:
            base.layers = saved

    def logits_at(self, final: torch.Tensor, last: torch.Tensor) -> torch.Tensor:
        """Next-token logits ``(B, V)`` at positions ``last``."""
        return self.head(final[torch.arange(len(last), device=final.device), last])


def _check_dialogues(dialogues, name: str = "dialogues") -> None:
    if isinstance(dialogues, str | bytes) or not isinstance(dialogues, Sequence):
        raise TypeError(f"{name}: expected a sequence of Dialogue, got "
                        f"{type(dialogues).__name__}")  # fmt: skip
    if not dialogues:
        raise ValueError(f"{name}: must not be empty")
    if not all(isinstance(d, Dialogue) for d in dialogues):
        raise TypeError(f"{name}: every entry must be a Dialogue")


def _same_length(dialogues: Sequence[Dialogue]) -> int:
    _check_dialogues(dialogues)
    n = {len(d.episodes) for d in dialogues}
    if len(n) != 1:
        raise ValueError(f"dialogues: a batch needs one episode count, got {sorted(n)}")
    return n.pop()


class Reader(nn.Module):
    """A memory method: ``forward(dialogues) -> (B, V)`` logits of each query's answer."""

    def __init__(self, runner: EpisodeRunner) -> None:
        super().__init__()
        if not isinstance(runner, EpisodeRunner):
            raise TypeError(f"runner: expected an EpisodeRunner, got {type(runner).__name__}")
        self.runner = runner

    def texts(self, dialogues: Sequence[Dialogue]) -> list[str]:
        """Every episode text the method will run (for :meth:`EpisodeRunner.precompute`)."""
        return [e for d in dialogues for e in d.episodes]


class FrozenReader(Reader):
    """The frozen backbone, one window (the query alone)."""

    def texts(self, dialogues):
        return [d.query for d in dialogues]

    def forward(self, dialogues: Sequence[Dialogue]) -> torch.Tensor:
        _same_length(dialogues)
        h, _, last = self.runner.batch([d.query for d in dialogues])
        return self.runner.logits_at(self.runner.run_top(h), last)


class DeltaMemReader(Reader):
    """delta-Mem on the runner's top layers (copies of them; the backbone is untouched).

    Parameters
    ----------
    runner : EpisodeRunner
    config : DeltaMemConfig
    bptt : int
        Backpropagate through at most this many episodes (the state is detached between
        blocks of ``bptt`` episodes).
    seed : int
    """

    def __init__(self, runner: EpisodeRunner, config: DeltaMemConfig | None = None, *,
                 bptt: int = 4, seed: int = 0) -> None:  # fmt: skip
        super().__init__(runner)
        self.bptt = check_int(bptt, "bptt", min=1, max=1 << 16)
        self.top = copy.deepcopy(runner.top_layers())
        self.wrapped = attach_delta_mem(self.top, config, seed=check_seed(seed))

    def forward(self, dialogues: Sequence[Dialogue]) -> torch.Tensor:
        n = _same_length(dialogues)
        reset_delta_mem(self.top)
        for s in range(n):
            if s and s % self.bptt == 0:
                detach_delta_mem_state(self.top)
            h, mask, last = self.runner.batch([d.episodes[s] for d in dialogues])
            with write_mask(self.top, mask):
                final = self.runner.run_top(h, self.top)
        return self.runner.logits_at(final, last)

    def num_trainable(self) -> int:
        return sum(p.numel() for p in delta_mem_parameters(self.top))


LORA_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj")


def lora_rank_for(num_params: int, runner: EpisodeRunner,
                  modules: tuple[str, ...] = LORA_MODULES) -> int:  # fmt: skip
    """LoRA rank whose trainable parameters on the top layers come closest to ``num_params``."""
    num_params = check_int(num_params, "num_params", min=1, max=1 << 40)
    if not isinstance(runner, EpisodeRunner):
        raise TypeError(f"runner: expected an EpisodeRunner, got {type(runner).__name__}")
    if isinstance(modules, str) or not isinstance(modules, Sequence) or not modules or \
            not all(isinstance(m, str) for m in modules):
        raise ValueError(f"modules: expected a non-empty tuple of module names, got {modules!r}")
    per_rank = 0
    for layer in runner.top_layers():
        for name, mod in layer.named_modules():
            if name.rpartition(".")[2] in modules and isinstance(mod, nn.Linear):
                per_rank += mod.in_features + mod.out_features
    if per_rank == 0:
        raise ValueError(f"modules: none of {modules} found in the top layers")
    return max(1, round(num_params / per_rank))


class LoRAReader(Reader):
    """LoRA (peft) on copies of the top layers' attention projections; no state.

    Parameters
    ----------
    runner : EpisodeRunner
    rank : int
    alpha : float
    modules : tuple of str
    seed : int
    """

    def __init__(self, runner: EpisodeRunner, rank: int = 8, *, alpha: float = 16.0,
                 modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj"),
                 seed: int = 0) -> None:  # fmt: skip
        from peft import LoraConfig, inject_adapter_in_model

        super().__init__(runner)
        rank = check_int(rank, "rank", min=1, max=4096)
        alpha = check_float(alpha, "alpha", min=0.0, max=1e6)
        lora_rank_for(1, runner, modules)  # refuses modules that are not there
        top = copy.deepcopy(runner.top_layers())
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(check_seed(seed))
            self.top = inject_adapter_in_model(
                LoraConfig(r=rank, lora_alpha=alpha, target_modules=list(modules),
                           lora_dropout=0.0), top)  # fmt: skip
        for name, p in self.top.named_parameters():
            p.requires_grad_("lora_" in name)

    def texts(self, dialogues):
        return [d.query for d in dialogues]

    def forward(self, dialogues: Sequence[Dialogue]) -> torch.Tensor:
        _same_length(dialogues)
        h, _, last = self.runner.batch([d.query for d in dialogues])
        return self.runner.logits_at(self.runner.run_top(h, self.top), last)

    def num_trainable(self) -> int:
        return sum(p.numel() for p in self.top.parameters() if p.requires_grad)


class MemoryTokensReader(Reader):
    """RMT-style memory tokens: ``m`` vectors prepended to each window at layer ``start``.

    The memory of episode ``s + 1`` is ``M_0 + B A o_s``, with ``o_s`` the final hidden
    states at the memory positions of episode ``s`` and ``A, B`` a rank-``rank`` write map
    (``B = 0`` at init). Only ``M_0, A, B`` are trained.
    """

    def __init__(self, runner: EpisodeRunner, num_tokens: int = 4, *, rank: int = 8,
                 bptt: int = 4, seed: int = 0) -> None:  # fmt: skip
        super().__init__(runner)
        m = check_int(num_tokens, "num_tokens", min=1, max=4096)
        rank = check_int(rank, "rank", min=1, max=4096)
        self.bptt = check_int(bptt, "bptt", min=1, max=1 << 16)
        D = runner.layers[0].self_attn.q_proj.in_features
        g = torch.Generator().manual_seed(check_seed(seed))
        scale = float(runner.model.get_input_embeddings().weight.std())
        self.init = nn.Parameter(torch.randn(m, D, generator=g) * scale)
        self.down = nn.Parameter(torch.randn(rank, D, generator=g) * D**-0.5)
        self.up = nn.Parameter(torch.zeros(D, rank))
        self.to(device=runner.device, dtype=runner.dtype)

    def forward(self, dialogues: Sequence[Dialogue]) -> torch.Tensor:
        n = _same_length(dialogues)
        m = self.init.shape[0]
        mem = self.init.expand(len(dialogues), -1, -1)
        for s in range(n):
            if s and s % self.bptt == 0:
                mem = mem.detach()
            h, _, last = self.runner.batch([d.episodes[s] for d in dialogues], prefix=m)
            h = torch.cat([mem, h[:, m:]], dim=1)
            final = self.runner.run_top(h)
            mem = self.init + (final[:, :m] @ self.down.T) @ self.up.T
        return self.runner.logits_at(final, last)

    def num_trainable(self) -> int:
        return sum(p.numel() for p in self.parameters())


class RetrievalReader(Reader):
    """The most lexically similar past episode, then the query, in one window (frozen)."""

    @staticmethod
    def window_text(d: Dialogue) -> str:
        return d.history[lexical_retrieve(d.history, d.query)] + " " + d.query

    def texts(self, dialogues):
        return [self.window_text(d) for d in dialogues]

    def forward(self, dialogues: Sequence[Dialogue]) -> torch.Tensor:
        _same_length(dialogues)
        h, _, last = self.runner.batch(self.texts(dialogues))
        return self.runner.logits_at(self.runner.run_top(h), last)


class InContextReader(Reader):
    """Every episode in one window (an oracle over-length for the memory methods)."""

    def texts(self, dialogues):
        return [" ".join(d.episodes) for d in dialogues]

    def forward(self, dialogues: Sequence[Dialogue]) -> torch.Tensor:
        _same_length(dialogues)
        h, _, last = self.runner.batch(self.texts(dialogues))
        return self.runner.logits_at(self.runner.run_top(h), last)


@dataclass(frozen=True)
class MemoryEvalResult:
    """Accuracy of a reader on each family.

    Attributes
    ----------
    recall_acc, overwrite_acc, multi_acc : float
        Accuracy over the candidate values on each family (NaN when absent).
    per_dialogue : dict of str to ndarray
        Family -> 0/1 correctness of each dialogue (for bootstraps).
    """

    recall_acc: float
    overwrite_acc: float
    multi_acc: float
    per_dialogue: dict

    @property
    def average(self) -> float:
        """The average task score: mean of the three accuracies."""
        return float(np.mean([self.recall_acc, self.overwrite_acc, self.multi_acc]))


def candidate_ids(encode: Callable[[str], list[int]], values: Sequence[str]) -> list[int]:
    """First token id of each value word as it follows ``"... likes"`` (leading space)."""
    if not callable(encode):
        raise TypeError(f"encode: expected a callable, got {type(encode).__name__}")
    if isinstance(values, str) or not isinstance(values, Sequence) or not values:
        raise ValueError("values: expected a non-empty sequence of str")
    if not all(isinstance(v, str) for v in values):
        raise TypeError("values: every entry must be a str")
    ids = []
    for v in values:
        toks = encoded_ids(encode(" " + v)) or encoded_ids(encode(v))
        if not toks:
            raise ValueError(f"values: {v!r} encodes to no tokens")
        ids.append(int(toks[0]))
    if len(set(ids)) != len(ids):
        raise ValueError("values: two values share their first token")
    return ids


@torch.no_grad()
def evaluate_episodes(reader: Reader, dialogues: Sequence[Dialogue], values: Sequence[str], *,
                      batch_size: int = 32) -> MemoryEvalResult:  # fmt: skip
    """Accuracy of ``reader`` on ``dialogues``: the highest logit among the values wins.

    Dialogues are grouped by family and episode count; each batch resets the memory.
    """
    if not isinstance(reader, Reader):
        raise TypeError(f"reader: expected a Reader, got {type(reader).__name__}")
    _check_dialogues(dialogues)
    batch_size = check_int(batch_size, "batch_size", min=1, max=1 << 16)
    cand = torch.tensor(candidate_ids(reader.runner.encode, values))
    index = {v: i for i, v in enumerate(values)}
    reader.eval()
    reader.runner.precompute(reader.texts(dialogues))
    per: dict[str, list[float]] = {f: [] for f in FAMILIES}
    groups: dict[tuple, list[Dialogue]] = {}
    for d in dialogues:
        if d.answer not in index:
            raise ValueError(f"values: the answer {d.answer!r} is not a candidate")
        groups.setdefault((d.family, len(d.episodes)), []).append(d)
    for (family, _), group in groups.items():
        for i in range(0, len(group), batch_size):
            chunk = group[i:i + batch_size]
            pred = reader(chunk)[:, cand.to(reader.runner.device)].argmax(-1).cpu()
            per[family] += [float(int(p) == index[d.answer]) for p, d in zip(pred, chunk,
                                                                             strict=True)]
    accs = {f: float(np.mean(v)) if v else float("nan") for f, v in per.items()}
    return MemoryEvalResult(accs["recall"], accs["overwrite"], accs["multi"],
                            {f: np.asarray(v) for f, v in per.items()})  # fmt: skip


def fit_reader(reader: Reader, batches, *, max_iter: int, lr: float = 3e-3, seed: int = 0,
               answer_ids: Callable[[Dialogue], int]) -> list[float]:  # fmt: skip
    """Train a reader's own parameters on cross-entropy of each query's answer token.

    Parameters
    ----------
    reader : Reader
    batches : iterable of lists of Dialogue (one episode count per batch)
    max_iter : int
    lr : float
    seed : int
    answer_ids : callable Dialogue -> int
        The answer's token id.

    Returns
    -------
    list of float
        The training losses.
    """
    if not isinstance(reader, Reader):
        raise TypeError(f"reader: expected a Reader, got {type(reader).__name__}")
    if not any(p.requires_grad for p in reader.parameters()):
        raise ValueError("reader: has no trainable parameters")
    max_iter = check_int(max_iter, "max_iter", min=1, max=10**7)
    lr = check_float(lr, "lr", min=0.0, max=10.0, min_inclusive=False)
    seed = check_seed(seed)
    if not callable(answer_ids):
        raise TypeError(f"answer_ids: expected a callable, got {type(answer_ids).__name__}")
    if isinstance(batches, str | bytes) or not hasattr(batches, "__iter__"):
        raise TypeError(f"batches: expected an iterable of lists of Dialogue, got "
                        f"{type(batches).__name__}")  # fmt: skip

    def loss_fn(model, batch):
        _check_dialogues(batch, "batches")
        logits = model(batch)
        target = [answer_ids(d) for d in batch]
        if not all(isinstance(t, int) and 0 <= t < logits.shape[-1] for t in target):
            raise ValueError(f"answer_ids: must give token ids in [0, {logits.shape[-1]})")
        target = torch.tensor(target, device=logits.device)
        return nn.functional.cross_entropy(logits, target)

    res = train(reader, batches, max_iter=max_iter, lr=lr, seed=seed, loss_fn=loss_fn,
                device=str(reader.runner.device), grad_clip=1.0,
                desc="delta_mem reader")  # fmt: skip
    reader.eval()
    return list(res.losses)
