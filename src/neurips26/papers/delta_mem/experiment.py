"""Reproduction of delta-Mem on multi-episode recall with a frozen SmolLM2-135M.

Each dialogue is a stream of short episodes, one context window each; the last asks about a
fact stated in an earlier episode (``"Alice likes tea."`` ... ``"Question: what does Alice
like? Answer: Alice likes"``), so the fact is never in the query's window. Families:
single-fact recall, overwrite (the fact changes later; the latest value is the answer) and
multi-fact recall. delta-Mem is attached to the top decoder layers of the frozen backbone
and trained on next-token cross-entropy of the answer token, the state carried across the
episodes of a dialogue. Baselines: the frozen backbone (window only), LoRA on the same
layers with matched trainable parameters (peft), RMT-style memory tokens, and lexical
retrieval of the most similar past episode into the window; an in-context oracle (all
episodes in one window) on a subset. Scores are accuracies among the candidate values;
general ability is the held-out next-token loss on standard-library documentation
(``pydoc_data.topics``, a slice never used for anything else) with the memory attached and
its state carried across windows.

Uncertainties are 95% bootstrap half-widths over evaluation dialogues (pooled over seeds;
each seed draws its own training stream, evaluation set and initialisation).

Deviations from the paper
-------------------------
- Backbone and data: the paper uses Qwen3-4B/8B and SmolLM3-3B on LoCoMo,
  MemoryAgentBench, HotpotQA, IFEval and GPQA; none is available offline. We use
  SmolLM2-135M-Instruct and synthetic templated dialogues (12 names, 8 values); the
  paper's benchmarks are replaced by three recall families.
- Scale: delta-Mem (and LoRA) sit on the top layers only and train for a few hundred
  steps, to fit 2 CPU cores. Because only those layers change, the residual stream
  entering them is computed once per distinct episode and reused (exact).
- Writes are token-level; the reference's message/sentence-mean writes are left out.
  The scan is a sequential PyTorch loop, not the reference's Triton kernel.
- Memory tokens enter at the first adapted layer (not the embeddings, which would need a
  full forward per step), and are written back through a rank-8 map.
- Truncated backpropagation over ``bptt`` episodes (our choice; the reference's is not
  stated).
- The smoke tier runs on a tiny random LLaMA-layout model with a word tokenizer.

What does not reproduce at the small tier, and why we think so
----------------------------------------------------------------
- Beating the strongest baseline (1.15x): lexical retrieval of the most similar past
  episode is close to perfect on templated recall, because the query repeats the name and
  the verb of the fact and ties go to the latest episode (which also solves overwrite).
  The paper's benchmarks paraphrase and mix many sessions, where lexical retrieval is
  much weaker. The spec expected this.
- Larger gains on memory-heavy families: with few training steps the 8 x 8 state learns
  the overwrite family about as well as single-fact recall, but multi-fact recall (two or
  three facts competing for the same small state) lags, so the mean heavy-family gain is
  not above the single-fact gain.
- General ability: the memory is trained only on answer-token cross-entropy (as the
  paper's loss), and its corrections stay active on unrelated text; on held-out
  documentation the next-token loss rises by more than the 2% the spec allows in our
  runs, though two seeds give the ratio a wide Student-t interval. The paper's larger
  backbones and longer, more varied training data likely dampen this.
- Memory tokens and LoRA stay near chance: LoRA has no state across windows by design;
  the memory tokens, entering at the top layers with a short training budget, do not
  learn to carry the fact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from neurips26.common.experiment import RunResult, param
from neurips26.common.models.llm import decoder_layers, load_causal_lm, load_smollm2, tiny_causal_lm
from neurips26.common.progress import phase
from neurips26.common.stats import bootstrap_ci, seed_ci

from . import (
    FAMILIES,
    DeltaMemConfig,
    DeltaMemReader,
    EpisodeRunner,
    FrozenReader,
    InContextReader,
    LoRAReader,
    MemoryTokensReader,
    RetrievalReader,
    WordTokenizer,
    all_texts,
    attach_delta_mem,
    candidate_ids,
    delta_mem_modules,
    delta_rule_scan,
    evaluate_episodes,
    fit_reader,
    lora_rank_for,
    make_dialogues,
    reset_delta_mem,
    state_floats,
)
from .tasks import VALUES

METHODS = ("frozen", "delta", "lora", "rmt", "retrieval")


@dataclass(frozen=True)
class Config:
    seed: int = 0
    model: str = param("smollm2", help="backbone", choices=("tiny", "smollm2"))
    model_path: str = param("", help="a local Hugging Face checkpoint (overrides model)")
    num_top_layers: int = param(2, help="adapted top decoder layers", min=1, max=512)
    rank: int = param(8, help="state rank r (state r x r)", min=1, max=1024)
    heads: tuple[str, ...] = param(("q", "k", "v", "o"), help="corrected projections",
                                   choices=("q", "k", "v", "o"))
    num_episodes: int = param(3, help="episodes per dialogue, query included", min=3, max=64)
    num_names: int = param(8, help="people in the name pool", min=4, max=12)
    num_values: int = param(8, help="candidate values (chance = 1/num_values)", min=2,
                            max=16)  # fmt: skip
    train_iter: int = param(120, help="training steps of each trained method", min=1)
    lora_iter: int = param(40, help="training steps of LoRA (no state: queries only)", min=1)
    batch_size: int = param(8, help="dialogues per training step", min=1, max=4096)
    lr: float = param(1e-2, help="Adam step of the memory methods", min=1e-6, max=1.0)
    bptt: int = param(4, help="episodes of backpropagation through the state", min=1)
    num_eval: int = param(48, help="evaluation dialogues per family and seed", min=1)
    num_oracle: int = param(8, help="dialogues per family for the in-context oracle", min=0)
    num_seeds: int = param(2, help="seeds (training stream, eval set, init)", min=1, max=20)
    lm_tokens: int = param(256, help="held-out tokens for the LM loss", min=8)
    window: int = param(64, help="context window of one episode (tokens)", min=8)
    device: str = param("cpu", help="torch device", choices=("cpu", "cuda"))


TIERS = {
    "smoke": Config(model="tiny", num_top_layers=1, train_iter=12, lora_iter=4, batch_size=4,
                    num_eval=6, num_oracle=2, lm_tokens=48, num_names=4, num_values=4,
                    window=32, num_seeds=1),
    "small": Config(),
    "paper": Config(num_top_layers=8, num_episodes=6, train_iter=1500, lora_iter=500,
                    batch_size=16, lr=3e-3, num_eval=500, num_oracle=100, num_seeds=3,
                    lm_tokens=4096),
}

METRICS = (
    "*_avg", "*_recall_acc", "*_overwrite_acc", "*_multi_acc",
    "ratio_vs_frozen", "ratio_vs_frozen_ci", "ratio_vs_best", "ratio_vs_best_ci",
    "gain_recall", "gain_overwrite", "gain_multi", "heavy_over_single",
    "heavy_over_single_ci",
    "lm_loss_frozen", "lm_loss_delta", "lm_loss_ratio", "lm_loss_ratio_ci",
    "state_floats_per_layer", "delta_params", "lora_params", "rmt_params", "lora_rank",
    "lora_param_mismatch", "train_loss_first", "train_loss_last",
    "check_zero_init_error", "check_backbone_unchanged", "check_scan_error",
)  # fmt: skip


def _load(cfg: Config):
    if cfg.model_path:
        model, tok = load_causal_lm(cfg.model_path, device=cfg.device)
    elif cfg.model == "smollm2":
        model, tok = load_smollm2()
    else:
        wt = WordTokenizer()
        model = tiny_causal_lm("llama", seed=cfg.seed, vocab_size=256, hidden_size=32,
                               num_layers=2, num_heads=4, num_kv_heads=2,
                               intermediate_size=64)  # fmt: skip
        return model.to(cfg.device), wt.encode, lambda s: list(s.encode("utf-8"))
    model = model.to(cfg.device)

    def encode(s):
        return tok(s, add_special_tokens=False).input_ids

    return model, encode, encode


def _lm_text(encode_lm, n: int) -> np.ndarray:
    from neurips26.common.data.text import pydoc_topics_text

    text = pydoc_topics_text()
    tail = text[-(40 * n):]  # the last part of the sorted topics: held out
    ids = np.asarray(encode_lm(tail), dtype=np.int64)
    return ids[-n:]


@torch.no_grad()
def _lm_loss(runner: EpisodeRunner, top, ids: np.ndarray, window: int) -> float:
    """Mean next-token loss on held-out text, windows in order, memory state carried."""
    from .episodes import _base

    base = _base(runner.model)
    saved = base.layers
    if top is not None:
        reset_delta_mem(top)
        base.layers = torch.nn.ModuleList(list(saved)[: runner.start] + list(top))
    try:
        nll, count = 0.0, 0
        x = torch.as_tensor(ids, device=runner.device)
        for s in range(0, len(x) - 1, window):
            chunk = x[s: s + window + 1]
            if len(chunk) < 2:
                break
            logits = runner.model(input_ids=chunk[None, :-1], use_cache=False).logits[0]
            nll += float(torch.nn.functional.cross_entropy(logits, chunk[1:], reduction="sum"))
            count += len(chunk) - 1
    finally:
        base.layers = saved
        if top is not None:
            reset_delta_mem(top)
    return nll / count


def _numpy_scan_error(seed: int) -> float:
    """``delta_rule_scan`` against the update and read equations written out in numpy."""
    rng = np.random.default_rng(seed)
    B, T, r = 2, 7, 4
    S0, q, k, v = (rng.normal(size=s) for s in ((B, r, r), (B, T, r), (B, T, r), (B, T, r)))
    beta = rng.uniform(size=(B, T, r))
    S = S0.copy()
    reads = np.zeros((B, T, r))
    for b in range(B):
        for t in range(T):
            reads[b, t] = S[b] @ q[b, t]
            D_beta = np.diag(beta[b, t])
            S[b] = (np.eye(r) - D_beta) @ S[b] - D_beta @ np.outer(S[b] @ k[b, t], k[b, t]) \
                + D_beta @ np.outer(v[b, t], k[b, t])
    tt = [torch.as_tensor(a) for a in (S0, q, k, v, beta)]
    S_t, reads_t = delta_rule_scan(*tt)
    return float(max(np.abs(S_t.numpy() - S).max(), np.abs(reads_t.numpy() - reads).max()))


def _zero_init_error(model, encode, cfg: Config) -> float:
    """Max |logits| difference between the backbone and the freshly wrapped model."""
    import copy

    layers = decoder_layers(model)
    n = len(layers)
    top = copy.deepcopy(torch.nn.ModuleList(list(layers)[n - cfg.num_top_layers:]))
    ids = torch.tensor([encode("Alice likes tea. Bob went to the park.")], device=cfg.device)
    with torch.no_grad():
        ref = model(input_ids=ids, use_cache=False).logits
        from .episodes import _base

        attach_delta_mem(top, DeltaMemConfig(rank=cfg.rank, heads=cfg.heads))
        base = _base(model)
        saved = base.layers
        base.layers = torch.nn.ModuleList(list(saved)[: n - cfg.num_top_layers] + list(top))
        try:
            out1 = model(input_ids=ids, use_cache=False).logits
            out2 = model(input_ids=ids, use_cache=False).logits  # a non-zero state now
        finally:
            base.layers = saved
    return float(max((out1 - ref).abs().max(), (out2 - ref).abs().max()))


def _batches(cfg: Config, seed: int):
    rng = np.random.default_rng([seed, 1])
    i = 0
    while True:
        family = FAMILIES[i % len(FAMILIES)]
        i += 1
        yield make_dialogues(cfg.batch_size, family, num_episodes=cfg.num_episodes,
                             num_names=cfg.num_names, num_values=cfg.num_values,
                             rng=rng)  # fmt: skip


def _eval_set(cfg: Config, seed: int, num: int):
    rng = np.random.default_rng([seed, 2])
    return [d for f in FAMILIES
            for d in make_dialogues(num, f, num_episodes=cfg.num_episodes,
                                    num_names=cfg.num_names, num_values=cfg.num_values,
                                    rng=rng)]  # fmt: skip


TRAINING_FIELDS = ("model", "model_path", "num_top_layers", "rank", "heads", "num_episodes",
                   "num_names", "num_values", "batch_size", "lr", "bptt")


def _fit_cached(tag: str, reader, parts: torch.nn.Module, cfg: Config, seed: int,
                max_iter: int, lr: float, answer_ids) -> list[float]:  # fmt: skip
    """Train ``reader`` (its trainable ``parts``) or load them from the cache; the losses.

    Only the trained parts and the loss curve are stored (never the frozen backbone).
    """
    from neurips26.common.cache import cache_key, cached_module

    holder = torch.nn.Module()
    holder.parts = parts
    holder.register_buffer("losses", torch.full((max_iter,), float("nan")))
    conf = {k: getattr(cfg, k) for k in TRAINING_FIELDS}
    key = cache_key(f"delta_mem_{tag}", {**conf, "max_iter": max_iter, "lr": lr}, seed,
                    modules=("neurips26.papers.delta_mem", "neurips26.common.models"))  # fmt: skip

    def fit(h):
        got = fit_reader(reader, _batches(cfg, seed), max_iter=max_iter, lr=lr, seed=seed,
                         answer_ids=answer_ids)  # fmt: skip
        h.losses[: len(got)] = torch.tensor(got)

    cached_module(f"delta_mem_{tag}", key, lambda: holder, fit)
    reader.eval()
    losses = holder.losses.numpy()
    return [float(v) for v in losses[np.isfinite(losses)]]


def _avg_stat(arr: np.ndarray, col: int) -> float:
    fam = arr[:, 0]
    return float(np.mean([arr[fam == f, col].mean() for f in range(len(FAMILIES))
                          if np.any(fam == f)]))  # fmt: skip


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("nan")


def run(cfg: Config) -> RunResult:
    model, encode, encode_lm = _load(cfg)
    n = len(decoder_layers(model))
    if cfg.num_top_layers >= n:
        raise ValueError(f"num_top_layers: {cfg.num_top_layers} >= the model's {n} layers")
    runner = EpisodeRunner(model, encode, start=n - cfg.num_top_layers, window=cfg.window)
    values = VALUES[: cfg.num_values]
    cand = dict(zip(values, candidate_ids(encode, values), strict=True))
    with phase("residuals of every episode text", 1) as p:
        runner.precompute(all_texts(num_names=cfg.num_names, num_values=cfg.num_values))
        p.advance()
    mcfg = DeltaMemConfig(rank=cfg.rank, heads=cfg.heads)
    lm_ids = _lm_text(encode_lm, cfg.lm_tokens)
    backbone_before = {k: v.clone() for k, v in model.state_dict().items()}
    rows, oracle, lm_delta, losses = [], [], [], []

    def answer_ids(d):
        return cand[d.answer]

    params = {}
    for s in range(cfg.num_seeds):
        seed = 1000 * cfg.seed + s
        ev = _eval_set(cfg, seed, cfg.num_eval)
        res = {"frozen": evaluate_episodes(FrozenReader(runner), ev, values),
               "retrieval": evaluate_episodes(RetrievalReader(runner), ev, values)}
        dm = DeltaMemReader(runner, mcfg, bptt=cfg.bptt, seed=seed)
        mems = torch.nn.ModuleList([w.memory for w in delta_mem_modules(dm.top)])
        loss = _fit_cached("delta", dm, mems, cfg, seed, cfg.train_iter, cfg.lr, answer_ids)
        losses.append((float(np.mean(loss[: max(1, len(loss) // 10)])),
                       float(np.mean(loss[-max(1, len(loss) // 10):]))))  # fmt: skip
        res["delta"] = evaluate_episodes(dm, ev, values)
        lm_delta.append(_lm_loss(runner, dm.top, lm_ids, cfg.window))
        rank = lora_rank_for(dm.num_trainable(), runner)
        lora = LoRAReader(runner, rank, seed=seed)
        adapters = torch.nn.ModuleList([mod for name, mod in lora.top.named_modules()
                                        if name.endswith(("lora_A", "lora_B"))])  # fmt: skip
        _fit_cached("lora", lora, adapters, cfg, seed + 1, cfg.lora_iter, cfg.lr / 10,
                    answer_ids)  # fmt: skip
        res["lora"] = evaluate_episodes(lora, ev, values)
        rmt = MemoryTokensReader(runner, 4, bptt=cfg.bptt, seed=seed)
        tokens = torch.nn.ParameterList([rmt.init, rmt.down, rmt.up])
        _fit_cached("rmt", rmt, tokens, cfg, seed + 2, cfg.train_iter, cfg.lr, answer_ids)
        res["rmt"] = evaluate_episodes(rmt, ev, values)
        params = {"delta_params": dm.num_trainable(), "lora_params": lora.num_trainable(),
                  "rmt_params": rmt.num_trainable(), "lora_rank": rank,
                  "state_floats_per_layer": max(state_floats(dm.top))}  # fmt: skip
        if cfg.num_oracle:
            sub = _eval_set(cfg, seed + 3, cfg.num_oracle)
            oracle.append(evaluate_episodes(InContextReader(runner), sub, values).average)
        for fi, f in enumerate(FAMILIES):
            for j in range(len(res["frozen"].per_dialogue[f])):
                rows.append([fi] + [res[m].per_dialogue[f][j] for m in METHODS])
    arr = np.asarray(rows, dtype=float)
    col = {m: i + 1 for i, m in enumerate(METHODS)}
    m: dict = {}
    for meth in METHODS:
        m[f"{meth}_avg"] = _avg_stat(arr, col[meth])
        for fi, f in enumerate(FAMILIES):
            m[f"{meth}_{f}_acc"] = float(arr[arr[:, 0] == fi, col[meth]].mean())
    m["oracle_avg"] = float(np.mean(oracle)) if oracle else float("nan")
    others = ("lora", "rmt", "retrieval")

    def vs_frozen(a):
        return _ratio(_avg_stat(a, col["delta"]), _avg_stat(a, col["frozen"]))

    def vs_best(a):
        return _ratio(_avg_stat(a, col["delta"]), max(_avg_stat(a, col[o]) for o in others))

    def gain(a, fi):
        sel = a[a[:, 0] == fi]
        return _ratio(sel[:, col["delta"]].mean(), sel[:, col["frozen"]].mean()) if len(sel) \
            else float("nan")

    def heavy(a):
        return _ratio(0.5 * (gain(a, 1) + gain(a, 2)), gain(a, 0))

    for name, fn in (("ratio_vs_frozen", vs_frozen), ("ratio_vs_best", vs_best),
                     ("heavy_over_single", heavy)):  # fmt: skip
        ci = bootstrap_ci(arr, fn, num_bootstrap=500, seed=cfg.seed)
        m[name], m[f"{name}_ci"] = ci.estimate, ci.half_width
    for fi, f in enumerate(FAMILIES):
        m[f"gain_{f}"] = gain(arr, fi)
    m["lm_loss_frozen"] = _lm_loss(runner, None, lm_ids, cfg.window)
    m["lm_loss_delta"] = float(np.mean(lm_delta))
    m["lm_loss_ratio"] = m["lm_loss_delta"] / m["lm_loss_frozen"]
    # the frozen loss is one fixed number; the trained memory varies with the seed
    m["lm_loss_ratio_ci"] = seed_ci(np.asarray(lm_delta) / m["lm_loss_frozen"]).half_width
    m.update(params)
    m["lora_param_mismatch"] = abs(params["lora_params"] / params["delta_params"] - 1.0)
    m["train_loss_first"] = float(np.mean([a for a, _ in losses]))
    m["train_loss_last"] = float(np.mean([b for _, b in losses]))
    after = model.state_dict()
    unchanged = all(torch.equal(v, after[k]) for k, v in backbone_before.items())
    no_grad = all(p.grad is None for p in model.parameters())
    m["check_backbone_unchanged"] = float(unchanged and no_grad)
    m["check_zero_init_error"] = _zero_init_error(model, encode, cfg)
    m["check_scan_error"] = _numpy_scan_error(cfg.seed)
    reasons = {k: "a frozen accuracy of 0 (no ratio)" for k, v in m.items()
               if isinstance(v, float) and np.isnan(v) and k != "oracle_avg"}  # fmt: skip
    if not oracle:
        reasons["oracle_avg"] = "num_oracle = 0"
    table = [{"method": meth, **{f: m[f"{meth}_{f}_acc"] for f in FAMILIES},
              "average": m[f"{meth}_avg"]} for meth in METHODS]  # fmt: skip
    best = max(others, key=lambda o: m[f"{o}_avg"])
    return RunResult(
        metrics=m, tables={"accuracy": table}, figures={"accuracy": _figure(m)},
        captions={"accuracy": "Accuracy among the candidate values on each recall family, "
                  "per method (the paper's main table: delta-Mem against the frozen "
                  "backbone and the memory baselines)."},
        reasons=reasons,
        notes=(f"strongest non-delta-Mem baseline: {best}",
               f"{len(arr)} evaluation dialogues over {cfg.num_seeds} seed(s); chance "
               f"accuracy {1 / cfg.num_values:.3f}"),
    )  # fmt: skip


def _figure(m) -> bytes:
    from neurips26.common.plotting import figure_png, new_figure

    fig, (ax,) = new_figure(width=6.0)
    xs = np.arange(len(FAMILIES))
    w = 0.8 / len(METHODS)
    for i, meth in enumerate(METHODS):
        ax.bar(xs + (i - len(METHODS) / 2 + 0.5) * w,
               [m[f"{meth}_{f}_acc"] for f in FAMILIES], width=w, label=meth)  # fmt: skip
    ax.set_xticks(xs, FAMILIES)
    ax.set_ylabel("accuracy")
    ax.legend(fontsize=7, ncol=3)
    return figure_png(fig)
