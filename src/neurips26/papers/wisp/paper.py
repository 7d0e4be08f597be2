"""wisp: metadata and claims (standard library and the registry only)."""

from neurips26.registry import Claim, Paper, Resources

_SMALL_PAPER = ("small", "paper")


#: Why a ratio against a named baseline has no control.
_BASELINE_IS_COMPARISON = (
    "A perplexity ratio against the named baseline pruned from the same calibration set "
    "at the same sparsity: the baseline is the comparison itself, and a method compared "
    "with itself is 1 by construction."
)


def _diagnostics(a, b, label="70"):
    return tuple(f"{e}_error_{m}_{label}" for e in ("diff", "recon") for m in (a, b))


def _second_reading(label):
    """Wisp's second reading (activations and differences in the score) at ``label``."""
    return (f"ratio_wisp_act_wanda_{label}",)


def _ratio_claim(cid, statement, metric, target, paper_value, diagnostics=()):
    return Claim(id=cid, statement=statement, paper_value=paper_value, metric=metric,
                 comparison="<=", target=target, tiers=_SMALL_PAPER,
                 no_control=_BASELINE_IS_COMPARISON, diagnostics=diagnostics)  # fmt: skip


PAPER = Paper(
    slug="wisp",
    title="Pruning LLMs by preserving input differentiation: Wisp, Wisp+ and Whisper",
    seed="004_839af22534344a66.txt",
    paragraph=6,
    field="model compression / LLM sparsification",
    grade="B",
    summary=(
        "Post-training pruning criteria keep weights with large activations (Wanda) or "
        "reconstruct layer outputs (SparseGPT). The paper argues that MLP gate and up "
        "neurons separate similar inputs into dissimilar outputs, so pruning should also "
        "preserve pairwise output differences. Wisp scores weights by input-difference "
        "norms without updating weights, Wisp+ refines the score per neuron with the pairs "
        "that neuron separates most, and Whisper runs SparseGPT's reconstruction on a "
        "lightly regularised difference Hessian; on Llama 2 / 3.1 they improve perplexity "
        "over Wanda and SparseGPT, more so at higher sparsity and also under 2:4."
    ),
    claims=(
        _ratio_claim("wisp_beats_wanda_70", "Wisp, update-free, has lower perplexity than "
                     "Wanda at 70% unstructured sparsity (ppl(Wisp) / ppl(Wanda), geometric "
                     "mean over calibration sets).", "ratio_wisp_wanda_70", 0.99,
                     "improves over Wanda; gains larger when constrained (spec: <= 0.99)",
                     _diagnostics("wisp", "wanda") + _second_reading("70")
                     + ("reading_ratio_wisp_pairing_random_wanda",
                        "reading_ratio_wisp_pairing_adjacent_wanda")),
        _ratio_claim("wisp_beats_wanda_60", "Wisp is at least as good as Wanda at 60% "
                     "(ppl ratio).", "ratio_wisp_wanda_60", 1.0,
                     "improves over Wanda (spec: <= 1.00)", _second_reading("60")),
        _ratio_claim("whisper_beats_sparsegpt_50", "Whisper is at least as good as "
                     "SparseGPT at 50% (ppl ratio).", "ratio_whisper_sparsegpt_50", 1.0,
                     "consistently improves over SparseGPT (spec: <= 1.00)"),
        _ratio_claim("whisper_beats_sparsegpt_60", "Whisper is at least as good as "
                     "SparseGPT at 60% (ppl ratio).", "ratio_whisper_sparsegpt_60", 1.0,
                     "consistently improves over SparseGPT (spec: <= 1.00)",
                     _diagnostics("whisper", "sparsegpt", "60")),
        _ratio_claim("whisper_beats_sparsegpt_70", "Whisper beats SparseGPT at 70% "
                     "(ppl ratio).", "ratio_whisper_sparsegpt_70", 0.99,
                     "consistently improves over SparseGPT (spec: <= 0.99 at 70%)",
                     (*_diagnostics("whisper", "sparsegpt"),
                      "reading_ratio_whisper_lam_0p5_sparsegpt",
                      "reading_ratio_whisper_lam_5p0_sparsegpt")),
        Claim(
            id="gains_grow_with_sparsity",
            statement=(
                "Wisp's relative gain over Wanda, 1 - ppl(Wisp)/ppl(Wanda), is larger at "
                "70% than at 50% (the difference, per calibration set)."
            ),
            paper_value="gains stronger in more constrained settings",
            metric="gain_growth", comparison=">", target=0.0, tiers=_SMALL_PAPER,
            no_control=(
                "A difference of Wisp's gains over Wanda at two sparsities, each paired on "
                "the calibration set: Wanda is the comparison at both, and Wanda against "
                "itself gains 0 at every sparsity by construction."
            ),
        ),
        _ratio_claim("wisp_beats_wanda_2of4", "Under 2:4 semi-structured sparsity Wisp is "
                     "at least as good as Wanda (ppl ratio).", "ratio_wisp_wanda_2of4", 1.0,
                     "improvements extend to structured sparsity (spec: <= 1.00)",
                     _second_reading("2of4")),
        _ratio_claim("whisper_beats_sparsegpt_2of4", "Under 2:4 Whisper is at least as good "
                     "as SparseGPT (ppl ratio).", "ratio_whisper_sparsegpt_2of4", 1.0,
                     "improvements extend to structured sparsity (spec: <= 1.00)",
                     _diagnostics("whisper", "sparsegpt", "2of4")),
        _ratio_claim("wisp_plus_beats_wisp_70", "Wisp+'s neuronwise refinement is at least "
                     "as good as Wisp at 70% (ppl(Wisp+) / ppl(Wisp)).",
                     "ratio_wisp_plus_wisp_70", 1.0, "Wisp+ refines Wisp (spec: <= 1.00)",
                     _diagnostics("wisp_plus", "wisp")),
        Claim(
            id="gate_up_sensitive",
            statement=(
                "MLP gate and up projections are particularly sparsity-sensitive: pruning "
                "only them at 70% (Wanda) raises log-perplexity more per pruned weight than "
                "pruning only the attention projections (per million weights; gate+up hold "
                "twice the weights of attention in SmolLM2, so the raw rise is not a fair "
                "comparison; it is reported as sensitivity_gateup_minus_attn_70)."
            ),
            paper_value="gate/up neurons are particularly sparsity-sensitive (motivation)",
            metric="sensitivity_per_weight_gateup_minus_attn_70", comparison=">", target=0.0,
            tiers=_SMALL_PAPER,
            no_control=(
                "A difference between two groups of the same model's linear maps pruned by "
                "the same criterion on the same calibration set: each group is the other's "
                "comparison, and there is no setting of the model where sensitivity to "
                "pruning must be absent."
            ),
        ),
        Claim(
            id="baselines_beat_magnitude",
            statement="Our Wanda beats magnitude pruning at 50% (a sanity check of the "
                      "baseline: ppl(Wanda) / ppl(magnitude)).",
            paper_value="Wanda paper: far below magnitude on LLMs",
            metric="ratio_wanda_magnitude_50", comparison="<", target=1.0,
            tiers=_SMALL_PAPER, kind="check",
        ),
        Claim(
            id="exact_sparsity",
            statement="Every pruned linear map has the requested sparsity (max deviation "
                      "of the fraction of zeros; unstructured rows round down).",
            paper_value="construction",
            metric="check_sparsity_error", comparison="abs<=", target=0.002, kind="check",
        ),
        Claim(
            id="nm_valid",
            statement="Every group of M inputs holds at most N nonzeros under N:M (1 = all).",
            paper_value="construction",
            metric="check_nm_valid", comparison=">=", target=1.0, kind="check",
        ),
        Claim(
            id="block_ppl_exact",
            statement="Perplexity from the captured block inputs equals the full model's "
                      "(relative difference).",
            paper_value="identity",
            metric="check_block_ppl_error", comparison="abs<=", target=1e-4, kind="check",
        ),
        Claim(
            id="whisper_lam_limit",
            statement="Whisper with lam = 1e8 picks SparseGPT's mask on a real layer "
                      "(fraction of equal mask entries).",
            paper_value="reduction (large lam tends to SparseGPT)",
            metric="check_whisper_lam_limit", comparison=">=", target=1.0, kind="check",
        ),
        Claim(
            id="dense_restored",
            statement="After every pruned run the dense weights are restored exactly "
                      "(relative perplexity change).",
            paper_value="construction",
            metric="check_dense_restored", comparison="abs<=", target=0.0, kind="check",
        ),
    ),
    deviations=(
        "Llama-2 7B/13B/70B and Llama-3.1 8B on C4 / WikiText-2 are replaced by "
        "SmolLM2-135M-Instruct (offline) on Python's documentation: calibration windows "
        "from the first 90% of pydoc_data.topics, perplexity on the last 10%.",
        "The small tier prunes the top 4 of 30 blocks from 8 x 64 calibration tokens and "
        "evaluates 2 x 256 held-out tokens, over 3 calibration sets; 4:8 only at the paper "
        "tier. The paper prunes every block from 128 x 2048 tokens.",
        "Wisp's score is run in two readings: pure input differences (judged) and "
        "activations plus differences (wisp_act, reported as a diagnostic).",
        "The pairing (nearest other token by cosine similarity of the layer input), Wisp+'s "
        "q = 0.1 and Whisper's Hessian dX^T dX/|P| + 0.05 X^T X/N are inferred from the "
        "abstract.",
        "SparseGPT's unstructured mask follows the reference code (lowest OBS saliencies "
        "across each 128-column block), not the per-row selection our spec guessed.",
        "The smoke tier runs a random two-block LLaMA-layout model on bytes.",
    ),
    tiers=(
        ("smoke", "random 2-block LLaMA-layout model (tiny_causal_lm), bytes, 0.5 and 2:4, "
                  "2 calibration sets of 4 x 32 tokens"),
        ("small", "SmolLM2-135M, top 4 of 30 blocks pruned, 8 x 64 calibration tokens, "
                  "2 x 256 held-out tokens, seven methods (Wisp in two readings) x "
                  "{50, 60, 70%, 2:4} x 3 calibration sets, plus the gate+up / attention "
                  "ablation"),
        ("paper", "any local HF checkpoint (--set model_path=..., e.g. Llama-2-7b-hf) with "
                  "--device cuda, every block, 128 x 2048 calibration tokens, 50/60/70%, "
                  "2:4, 4:8; not run here"),
    ),
    resources=Resources(cpus=1, memory_gb=3.0, gpu=1),
    paper_hours=8.0,
)
