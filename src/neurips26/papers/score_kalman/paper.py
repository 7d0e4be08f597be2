"""Metadata and claims of the Score Kalman Filter paper (arXiv 2605.16644).

The building blocks are exact (score matching, Stein closure, moment ODE; the degree-2
special case equals the information-form Kalman filter). The posterior moments come from
Stein's identity for ``theta_prior + theta_lik`` (truncated, Miller-style minimal
solution, per oscillator block), which is accurate for sharp likelihoods and approximate
for broad ones; a prior fit's Gaussian part is pinned to the moments' covariance when
regularisation is needed, and the moment ODE is integrated in central coordinates. With
the spec's noise (0.1) the SKF's RMSE margin over the best baseline is small and, with 5
runs at the small tier, not significant, which is why the two RMSE claims can fail (the
verdicts and values are in the store and the report).
"""

from neurips26.registry import Claim, Paper

PAPER = Paper(
    slug="score_kalman",
    title="Score Kalman Filter: moment filtering closed by score matching and Stein's identity",
    seed="004_839af22534344a66.txt",
    paragraph=10,
    field="nonlinear Bayesian filtering / state estimation",
    grade="A",
    summary=(
        "A moment filter that fits an exponential family to propagated polynomial moments by "
        "score matching (one linear solve, no partition function) and uses the fitted natural "
        "parameters in Stein's identity to close the moment hierarchy in the predict step and "
        "to recover posterior moments after the Bayes update. With a quadratic basis it is the "
        "information-form Kalman filter; the paper reports runs to n = 20 on coupled "
        "oscillators with lower RMSE than EKF, UKF, EnKF and a particle filter."
    ),
    claims=(
        Claim(
            id="lower_rmse",
            statement="SKF has lower position RMSE than EKF, UKF, EnKF and PF at every n",
            paper_value="lower RMSE than all baselines (qualitative)",
            metric="rmse_min_gap",
            comparison=">",
            target=0.0,
            tiers=("small", "paper"),
        ),
        Claim(
            id="lower_rmse_significant",
            statement="SKF beats EKF/UKF/EnKF by a paired one-sided Wilcoxon test at every n",
            paper_value="p < 0.05 (spec)",
            metric="wilcoxon_max_p",
            comparison="<",
            target=0.05,
            tiers=("small", "paper"),
        ),
        Claim(
            id="scales",
            statement="SKF runs finish with finite moments and cond(A) < 1e12 at the largest n",
            paper_value="runs through n = 20 (n = 8 at our small tier)",
            metric="skf_finite_fraction_largest_n",
            comparison=">=",
            target=1.0,
            tiers=("small", "paper"),
        ),
        Claim(
            id="kalman_special_case",
            kind="check",
            statement="With a degree-2 basis the SKF equals the information-form Kalman filter",
            paper_value="exact (spec: 1e-9)",
            metric="gaussian_kf_max_abs_diff",
            comparison="abs<=",
            target=1e-9,
        ),
        Claim(
            id="linear_algebra_cost",
            statement="SKF step time grows polynomially: log-log slope below 4 over n",
            paper_value="linear algebra only (spec: slope < 4)",
            metric="skf_time_slope",
            comparison="<",
            target=4.0,
            tiers=("small", "paper"),
        ),
        Claim(
            id="maxent_exponential_cost",
            statement="The MaxEnt grid fit costs at least 10x more at n = 3 than at n = 2",
            paper_value="partition function is an n-dimensional integral (spec: >= 10x)",
            metric="maxent_time_ratio_n3_n2",
            comparison=">=",
            target=10.0,
            tiers=("small", "paper"),
        ),
    ),
    deviations=(
        "The scaling claim's cond(A) < 1e12 test: on steps whose prior fit falls back to the "
        "pinned-Gaussian ridge fit (52-64 % of steps at the small tier, reported as "
        "skf_regularised_step_fraction_n*), cond is that of the regularised matrix, which "
        "the ridge keeps below 1e12 by construction; there the claim rests on every run "
        "finishing with valid moments.",
        "Posterior moments for bases richer than quadratic (inferred): theta_post = "
        "theta_prior (score-matching fit of the predicted moments) + theta_lik; its moments "
        "from the Stein equations truncated at degree K = 20 (moments above K set to zero, "
        "Miller's minimal-solution idea), E[1] = 1, least squares in coordinates "
        "standardised around the Gaussian part; per oscillator block with cross-block terms "
        "through a linear regression, two sweeps. Accurate when the Gaussian part dominates "
        "(sharp likelihoods); approximate for broad likelihoods; wrong for bimodal "
        "posteriors (a K-convergence gap is reported). Replaces a log-homotopy that diverged.",
        "Stein closure of the predict step: test monomials chosen from the top-degree basis "
        "terms, auxiliary unknowns, up to two extra equation layers; dense column-scaled "
        "least squares instead of scipy lsqr.",
        "Benchmark details inferred: double-well Duffing (a = -1, b = 1, damping 0.3), ring "
        "coupling 0.5, process noise sigma = 0.1 and observation noise r = 0.1 (spec) every "
        "0.1 time units, bimodal product prior exp(2q^2 - q^4) per position.",
        "Scaled down for 2 CPU cores: small tier n in {2, 4, 8}, 50 steps, 5 Monte Carlo runs "
        "(spec: 100 steps, 10 runs), RK4 with 2 substeps per observation.",
        "Integrability is checked on the leading form over fixed directions (necessary "
        "condition).",
        "Filter path (degree > 2, inferred): fits and predict closures in standardised "
        "coordinates; a fit with cond(A) > 1e12 or a leading form not below -1e-6 is "
        "replaced by a per-oscillator fit of the non-Gaussian coefficients with the "
        "Gaussian part pinned to the moments' N(m, C), ridged toward -0.01 z_i^4 until "
        "integrable with cond <= 1e12; predict closure per oscillator block by a "
        "truncated SVD anchored at Isserlis moments; cross-oscillator moments by a "
        "conditional-Gaussian rule (exact on Gaussians).",
        "Moment ODE integrated by RK4 in central coordinates (mean and central moments): "
        "raw-moment RK4 stages lose positive definiteness when the mean moves by more than "
        "a standard deviation per stage, which had stopped the n = 8 runs.",
        "A failed SKF run counts with infinite RMSE (the RMSE claims then fail) rather than "
        "being dropped.",
    ),
    tiers=(
        ("smoke", "n = 2, 10 steps, 1 run, PF 500 particles, no MaxEnt timing (seconds)"),
        ("small", "n in {2, 4, 8}, 50 steps, 5 runs, PF 2000 particles, MaxEnt n = 2, 3; "
                  "scaled to finish in well under 3 minutes on 2 cores"),
        ("paper", "n in {2, 4, 8, 12, 16, 20}, 100 steps, 50 runs, PF 10000 particles "
                  "(never run here)"),
    ),
)
