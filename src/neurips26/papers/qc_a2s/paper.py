"""qc_a2s: metadata and claims (standard library and the registry only)."""

from neurips26.registry import Claim, Paper, Resources

PAPER = Paper(
    slug="qc_a2s",
    title="Low-latency time-to-first-spike language models from the equivalence of discrete "
          "TTFS coding and static quantization (QC-A2S)",
    seed="000_23679aaaf2254bad.txt",
    paragraph=11,
    field="neuromorphic computing (spiking LLMs, ANN-to-SNN conversion, quantization)",
    grade="B",
    summary=(
        "Time-to-first-spike (TTFS) coding sends each value as the time of a single spike. "
        "Converting an LLM to a TTFS spiking network under a continuous-time assumption "
        "needs thousands of time steps per layer. In discrete time, a TTFS neuron whose "
        "membrane ramps by theta/T per step is exactly a static quantizer with T + 1 "
        "levels and clip theta, and with an initial offset of half a step it rounds "
        "instead of truncating. QC-A2S therefore converts a pretrained LLM with a static "
        "quantization recipe (calibrated clips, smoothing of activation outliers) carried "
        "by these discretization-compatible neurons, reaching the float model's quality "
        "at a few time steps per layer."
    ),
    claims=(
        Claim(
            id="ttfs_is_static_quantization",
            statement=(
                "A discrete TTFS neuron, simulated step by step on the real activations of "
                "every converted site, transmits exactly the static quantizer's level: "
                "(theta/T) clip(floor(T x/theta + 1/2), 0, T) for the compatible neuron, "
                "floor(T x/theta) for the naive one (fraction of values whose level "
                "differs, rounding ties excluded, over every T of the simulation)."
            ),
            paper_value="exact equivalence (the paper's theorem)",
            metric="closed_form_mismatch",
            comparison="<=",
            target=0.0,
            no_control=(
                "An exact identity (the paper's theorem), checked value by value on real "
                "activations: a mismatch of zero has no effect size that a control could "
                "share, and one mismatching value refutes it."
            ),
        ),
        Claim(
            id="snn_equals_ann",
            statement=(
                "The event-by-event SNN simulation of the converted LLM and its "
                "fake-quantized ANN give identical logits (max |difference|, every T "
                "simulated, QC-A2S and the continuous baseline)."
            ),
            paper_value="identical (spec: <= 1e-6; we require bit for bit)",
            metric="snn_ann_max_abs_diff",
            comparison="<=",
            target=0.0,
            kind="check",
        ),
        Claim(
            id="low_latency",
            statement=(
                "QC-A2S is within 3% of the float model's held-out perplexity at T = 16 "
                "steps per spiking stage (ppl / float ppl - 1, geometric mean of the ratio "
                "over seeds, its interval on the log scale)."
            ),
            paper_value="competitive performance at substantially reduced latency "
                        "(spec: within 3% at T <= 16)",
            metric="qc_gap",
            comparison="<=",
            target=0.03,
            tiers=("small", "paper"),
            control="nocalib_gap",
            diagnostics=("calib_subsample_max_share", "qcsub_gap", "qc_within_steps"),
        ),
        Claim(
            id="low_latency_steps",
            statement=(
                "The smallest T of the sweep at which QC-A2S is within 3% of the float "
                "perplexity with its whole seed interval (upper end of the log-scale 95% "
                "interval of the gap over seeds, each T) is at most 16 (inf: at no T of "
                "the sweep). The T at which 'low latency' holds, measured."
            ),
            paper_value="competitive performance at substantially reduced latency "
                        "(spec: within 3% at T <= 16)",
            metric="qc_within_steps",
            comparison="<=",
            target=16.0,
            tiers=("small", "paper"),
            control="nocalib_within_steps",
            diagnostics=("qc_gap", "qcsub_gap", "calib_subsample_max_share"),
        ),
        Claim(
            id="beats_continuous",
            statement=(
                "Continuous-time TTFS conversion needs at least 16 times as many steps as "
                "QC-A2S to come within 3% of the float perplexity (inf: never, up to the "
                "largest T tried)."
            ),
            paper_value="continuous conversion needs e.g. 4,096 time steps",
            metric="cont_over_qc_steps",
            comparison=">=",
            target=16.0,
            tiers=("small", "paper"),
            no_control=(
                "A ratio of step counts against the named baseline, continuous-time TTFS "
                "conversion of the same model on the same windows: the baseline is the "
                "comparison itself."
            ),
        ),
        Claim(
            id="calibration_helps",
            statement=(
                "At T = 16 the calibrated clip beats the max clip with the same compatible "
                "neurons (perplexity gap of the max-clip ablation minus QC-A2S's)."
            ),
            paper_value="each component contributes (static quantization calibration)",
            metric="nocalib_minus_qc",
            comparison=">",
            target=0.0,
            tiers=("small", "paper"),
            no_control=(
                "A paired difference against the max-clip ablation (same neurons, seeds "
                "and windows): the ablation is the comparison itself."
            ),
            diagnostics=("calib_subsample_max_share", "qcsub_gap"),
        ),
        Claim(
            id="compatible_neuron_helps",
            statement=(
                "At T = 16 the discretization-compatible neuron (b0 = theta/2T) beats the "
                "naive floor neuron with the same calibration (gap of the floor ablation "
                "minus QC-A2S's)."
            ),
            paper_value="each component contributes (discretization-compatible neurons)",
            metric="floor_minus_qc",
            comparison=">",
            target=0.0,
            tiers=("small", "paper"),
            no_control=(
                "A paired difference against the floor-neuron ablation (same calibration, "
                "seeds and windows): the ablation is the comparison itself."
            ),
        ),
        Claim(
            id="one_spike_per_neuron",
            statement=(
                "TTFS sparsity: no neuron fires more than once per window in the SNN "
                "simulation (the mean, spikes_per_neuron, is reported beside it)."
            ),
            paper_value="a single spike per neuron",
            metric="max_spikes_per_neuron",
            comparison="<=",
            target=1.0,
            kind="check",
        ),
    ),
    deviations=(
        "SmolLM2-135M-Instruct (offline) instead of the paper's LLaMA-class models; held-out "
        "perplexity on standard-library documentation in 64-token windows instead of the "
        "paper's benchmarks.",
        "Only the inputs of the MLP linears spike at the small tier (60 stages); the paper "
        "tier adds the attention projections. Norms, softmax, SiLU, residuals and the "
        "attention products stay float; weights stay float.",
        "The discretization-compatible neuron is read as a half-step initial membrane "
        "offset (round half up); signed values use two neurons of opposite polarity.",
        "Per-tensor MSE clips over every calibration token (a streamed log-binned histogram, "
        "32 bins per octave; candidates: its percentiles and every channel's maximum); "
        "SmoothQuant migration (alpha 0.5) as per-neuron thresholds; no quantization-aware "
        "fine-tuning.",
        "QC-A2S and the max-clip ablation are swept over T on 5 seeds of calibration and "
        "evaluation windows; the floor and continuous arms on seed 0 (the floor arm on every "
        "seed at T = 16).",
    ),
    tiers=(
        ("smoke", "random 2-layer LLaMA-layout model on bytes: equivalence and spike checks"),
        ("small", "SmolLM2-135M, 8x64 calibration tokens, 6x64 held-out tokens, T in "
                  "{4..1024} (+4096 continuous), 5 seeds at T = 16, SNN simulated at "
                  "T in {4, 16, 64}"),
        ("paper", "any local checkpoint (--set model_path=..., --device cuda), every "
                  "block linear, 64x512 calibration and evaluation tokens, 5 seeds; not run "
                  "here"),
    ),
    resources=Resources(cpus=1, memory_gb=4.0, gpu=1),
)
