"""steering_hessian: metadata and claims (standard library and the registry only)."""

from neurips26.registry import Claim, Paper, Resources

_REAL = ("small", "paper")

PAPER = Paper(
    slug="steering_hessian",
    title="The steering Hessian: sharp directions explain the fragility of activation "
          "steering, and removing them is a one-line fix",
    seed="004_839af22534344a66.txt",
    paragraph=8,
    field="interpretability / inference-time control of language models",
    grade="B",
    summary=(
        "Contrastive activation addition (CAA) adds a mean contrastive residual difference "
        "to a language model's hidden states, and on many inputs it pushes the wrong way. "
        "The paper explains this with the steering Hessian, the second derivative of the "
        "behavioural loss with respect to the steering vector: its few top eigen-directions "
        "are sharp (tiny moves along them swing behaviour erratically), the rest are flat. "
        "Removing the CAA vector's sharp component barely changes the vector but cuts its "
        "directional curvature several-fold; the sharp part alone anti-steers, drives a "
        "disproportionate share of the steered-vs-unsteered distribution gap during "
        "generation, and acts as noise for either steering polarity."
    ),
    claims=(
        Claim(
            id="removal_keeps_direction",
            statement="Removing the sharp component keeps the steering vector's direction "
                      "(median cos(v, v') over conditions).",
            paper_value="cosine > 0.974 (typical settings)",
            metric="removal_cosine_median", comparison=">=", target=0.974,
            tiers=_REAL, control="random_removal_cosine_median",
        ),
        Claim(
            id="removal_keeps_norm",
            statement="Removing the sharp component shrinks the vector by less than 3% "
                      "(median 1 - ||v'||/||v|| over conditions).",
            paper_value="norm reduction < 3%",
            metric="removal_norm_reduction_median", comparison="<", target=0.03,
            tiers=_REAL, control="random_removal_norm_reduction_median",
        ),
        Claim(
            id="curvature_drop",
            statement="Sharp removal cuts the vector's directional curvature "
                      "(median |kappa(v)|/|kappa(v')| over conditions).",
            paper_value="median 4x over 36 conditions (up to 12x)",
            metric="curvature_reduction_median", comparison=">=", target=4.0,
            tiers=_REAL, control="random_curvature_reduction_median",
            diagnostics=("caa_curvature_over_top_median", "curvature_sign_flip_frac"),
        ),
        Claim(
            id="sharp_share_small",
            statement="Sharp directions hold a small part of the CAA vector's squared norm "
                      "(median over conditions).",
            paper_value="1-5% of the squared norm",
            metric="sharp_share_median", comparison="<=", target=0.05,
            tiers=_REAL, control="random_share_median",
        ),
        Claim(
            id="sharp_anti_steers",
            statement="Steering along the sharp part alone (rescaled to ||v||) reverses the "
                      "intended behaviour on most inputs in every condition (worst "
                      "condition's anti-steer rate on held-out prompts).",
            paper_value="anti-steer rates 53-100%, in every condition",
            metric="anti_steer_rate_min", comparison=">", target=0.5,
            tiers=_REAL, control="random_anti_steer_rate_min",
            diagnostics=("anti_steer_rate_median",),
        ),
        Claim(
            id="kl_attribution",
            statement="During generation the sharp part drives a disproportionate share of the "
                      "steered-vs-unsteered next-token KL: its KL over the full vector's, "
                      "divided by its share of ||v||^2 (median over conditions).",
            paper_value="disproportionate (spec: at least 3x its squared-norm share)",
            metric="kl_attribution_median", comparison=">=", target=3.0,
            tiers=_REAL, control="random_kl_attribution_median",
            diagnostics=("kl_attribution_h0_median", "kl_removal_attribution_median",
                         "random_kl_removal_attribution_median"),
        ),
        Claim(
            id="removal_beats_caa_generation",
            statement="In open-ended generation the sharp-removed vector scores at least as "
                      "high on the behaviour as CAA, at equal coherence (NLL within 5%): share "
                      "of conditions.",
            paper_value="25 of 25 conditions",
            metric="generation_win_frac", comparison=">=", target=1.0,
            tiers=_REAL, control="random_generation_win_frac",
            diagnostics=("caa_effect_median",),
        ),
        Claim(
            id="sharp_is_noise",
            statement="The sharp part acts as noise for both steering polarities: adding it "
                      "with either sign lowers behaviour control against v' alone (share of "
                      "condition x polarity cases).",
            paper_value="regardless of polarity (jailbreak experiment; spec: 8 of 12)",
            metric="polarity_noise_frac", comparison=">=", target=8 / 12,
            tiers=_REAL, control="random_polarity_noise_frac",
            diagnostics=("sharp_share_median",),
        ),
        Claim(
            id="sharp_beats_random",
            statement="Control: removing the sharp subspace lowers curvature more than "
                      "removing a random subspace of the same size (share of conditions).",
            paper_value="control (spec: at least 10 of 12 conditions)",
            metric="sharp_beats_random_frac", comparison=">=", target=10 / 12,
            tiers=_REAL, kind="check",
        ),
        Claim(
            id="caa_steers",
            statement="Sanity: CAA itself raises the behaviour-matching probability on "
                      "held-out prompts (median over conditions of the mean gain; bootstrap "
                      "over conditions). Control: a random direction of the same norm.",
            paper_value="premise of the paper",
            metric="caa_effect_median", comparison=">", target=0.0, tiers=_REAL,
            kind="check", control="random_effect_median",
        ),
        Claim(
            id="hessian_vs_finite_differences",
            statement="The dense steering Hessian equals central finite differences of the "
                      "autograd gradient (tiny float64 LLaMA; max error relative to max |H|).",
            paper_value="oracle",
            metric="check_hessian_fd_error", comparison="<=", target=1e-3, kind="check",
        ),
        Claim(
            id="lanczos_vs_dense",
            statement="Lanczos run to the full dimension gives the dense top-4 eigenvalues.",
            paper_value="oracle",
            metric="check_lanczos_error", comparison="<=", target=1e-5, kind="check",
        ),
        Claim(
            id="closed_form",
            statement="For a linear-softmax model the Hessian equals W^T (diag p - p p^T) W "
                      "averaged over prompts.",
            paper_value="closed form",
            metric="check_closed_form_error", comparison="<=", target=1e-10, kind="check",
        ),
        Claim(
            id="projection_orthogonal",
            statement="The sharp-removed vector is orthogonal to the removed basis.",
            paper_value="construction",
            metric="check_projection_error", comparison="<=", target=1e-10, kind="check",
        ),
        Claim(
            id="zero_steer_identity",
            statement="Steering with v = 0 reproduces the unsteered logits exactly.",
            paper_value="construction",
            metric="check_zero_steer_error", comparison="<=", target=0.0, kind="check",
        ),
        Claim(
            id="prefix_cache_exact",
            statement="The prompt-prefix cache gives the same answer log-probabilities as "
                      "the full forward pass.",
            paper_value="construction",
            metric="check_prefix_cache_error", comparison="<=", target=1e-10, kind="check",
        ),
    ),
    deviations=(
        "SmolLM2-135M-Instruct (offline) instead of Qwen2.5-7B, Llama-3.1-8B and Mistral-7B; "
        "the paper tier takes any local checkpoint (--set model_path=...). The smoke tier "
        "uses a random tiny LLaMA with byte tokens.",
        "Two behaviours of our own (sentiment of a reply, refusal-style phrasing) as "
        "multiple-choice CAA prompts from our word lists, instead of the paper's four tasks.",
        "Behavioural loss inferred: mean NLL of the behaviour-matching answer letter; the "
        "Hessian is evaluated at alpha v_CAA.",
        "Small tier: 'last' position mode only (a prompt-prefix key/value cache makes each "
        "HVP cost one token per prompt), two layers (10, 20), Lanczos with 20 HVPs and fixed "
        "k = 4; the adaptive k and the dense Hessian run on the tiny model of the smoke tier.",
        "Steering scale alpha = 4 (our choice for a 135M model: at alpha = 1 CAA barely moved "
        "the answer probabilities in a development run).",
        "Curvature reduction taken as |kappa(v)|/|kappa(v')| (the Hessian at a steered point "
        "is indefinite).",
        "Generation scored by a bag-of-words logistic regression on the answer texts; the "
        "polarity test is our analogue of the jailbreak experiment.",
        "Uncertainties are percentile bootstraps over conditions (and, for the anti-steer "
        "rate, a Wilson interval over held-out prompts) within one run, not over seeds.",
        "Controls (ours): every paper claim is measured again with a random orthonormal "
        "subspace of the same dimension removed instead of the sharp one.",
    ),
    tiers=(
        ("smoke", "random tiny LLaMA (d = 32, 2 layers, byte tokens), one behaviour, 2 layers, "
                  "dense Hessian, adaptive k; seconds"),
        ("small", "SmolLM2-135M-Instruct, 2 behaviours x 2 layers (10, 20), 'last' "
                  "positions, 16 CAA pairs, Lanczos (20 HVPs), k = 4, 32 held-out prompts, 6 "
                  "continuations of 16 tokens per condition; a few CPU minutes"),
        ("paper", "a local 7-8B checkpoint on CUDA (--set model_path=...), 'last' and 'all' "
                  "positions, 80 Lanczos steps, k = 8, 256 held-out prompts; not run here"),
    ),
    resources=Resources(cpus=1, memory_gb=4.0, gpu=1),
)
