"""GETO-LP: metadata and claims (standard library and the registry only)."""

from neurips26.registry import Claim, Paper

PAPER = Paper(
    slug="geto_lp",
    title=(
        "GETO-LP: an exact fixed-support Wasserstein barycenter LP on grids with "
        "axis-wise layered flows"
    ),
    seed="000_23679aaaf2254bad.txt",
    paragraph=15,
    field="optimal transport / linear programming",
    grade="A",
    summary=(
        "A linear program for the Wasserstein barycenter of M histograms on a common "
        "d-dimensional grid of N points under a separable cost. Instead of one N x N plan "
        "per input (O(M N^2) variables), mass travels from the barycenter to each input "
        "through d layers that each move it along one axis, giving O(d M N^(1+1/d)) "
        "variables; the optimum equals the classical LP's and the optimal plans are "
        "recovered by composing the layers."
    ),
    claims=(
        Claim(
            id="exactness",
            statement=(
                "GETO-LP is exact: its optimal value equals the classical full LP's on every "
                "instance where the full LP solves within its budget."
            ),
            paper_value="exact (spec: relative gap <= 1e-7)",
            metric="exact_max_rel_gap",
            comparison="<=",
            target=1e-7,
            no_control=(
                "An identity to a tolerance against an exact solver of the same LP (the "
                "classical full formulation, solved by the same HiGHS): any formulation that "
                "is not exact fails it, and there is no setting where an exact one must."
            ),
        ),
        Claim(
            id="certified_optimal",
            kind="check",
            statement=(
                "Every GETO solution carries a certificate of optimality: the dual bound "
                "from HiGHS's row duals (b'y plus the most negative reduced cost of each "
                "unit-mass group of variables) is within 1e-9 (relative) of its objective."
            ),
            paper_value="exact (a construction property of the LP's duality)",
            metric="certified_max_gap",
            comparison="<=",
            target=1e-9,
        ),
        Claim(
            id="plan_marginals",
            kind="check",
            statement=(
                "The transport plans recovered from the layers have marginals nu and mu_m "
                "(no extra optimisation)."
            ),
            paper_value="exact (spec: within 1e-9)",
            metric="plan_max_marginal_error",
            comparison="<=",
            target=1e-9,
        ),
        Claim(
            id="plan_cost",
            kind="check",
            statement="The recovered plans' weighted cost equals the GETO objective.",
            paper_value="exact (spec: within 1e-9)",
            metric="plan_max_cost_error",
            comparison="<=",
            target=1e-9,
        ),
        Claim(
            id="variable_count",
            kind="check",
            statement=(
                "GETO-LP has N + M N sum_k n_k variables (O(d M N^(1+1/d))); the built model "
                "matches the formula exactly on every instance."
            ),
            paper_value="O(d M N^(1+1/d)) vs O(M N^2)",
            metric="varcount_max_abs_error",
            comparison="==",
            target=0.0,
        ),
        Claim(
            id="variable_ratio",
            kind="check",
            statement=(
                "The ratio of GETO's to the full LP's variable count, (N + M N sum_k n_k) / "
                "(N + M N^2), matches the formula on every built pair of models."
            ),
            paper_value="O(d N^(1/d - 1)) ratio",
            metric="varratio_max_abs_error",
            comparison="==",
            target=0.0,
        ),
        Claim(
            id="solve_time_32",
            statement=(
                "At the largest small-tier grid (32 x 32, M = 3) GETO solves in at most 0.2x "
                "the full LP's time (CPU seconds of build + linprog in one run, without "
                "tracemalloc; an upper bound when the full LP hits its time limit)."
            ),
            paper_value="faster (spec: <= 0.2x)",
            metric="solve_time_ratio_largest",
            comparison="<=",
            target=0.2,
            tiers=("small", "paper"),
            no_control=(
                "A cost ratio against the named baseline (the full LP, built and solved by "
                "the same code and solver on the same instance): the baseline is the "
                "comparison itself, and the ratio fails when GETO is not faster."
            ),
        ),
        Claim(
            id="peak_memory_32",
            statement=(
                "At 32 x 32, M = 3, GETO's peak memory (tracemalloc: model build and hand-off "
                "to HiGHS, measured apart from the timing) is at most 0.2x the full LP's."
            ),
            paper_value="memory-efficient (spec: <= 0.2x)",
            metric="peak_mem_ratio_largest",
            comparison="<=",
            target=0.2,
            tiers=("small", "paper"),
            no_control=(
                "A memory ratio against the named baseline (the full LP, built and handed to "
                "HiGHS by the same code on the same instance): the baseline is the "
                "comparison itself, and the ratio fails when GETO is not leaner."
            ),
        ),
        Claim(
            id="full_lp_over_budget",
            statement=(
                "At the largest grid of the tier the full LP's memory estimate (nonzeros x "
                "bytes per nonzero) exceeds the 8 GB budget while GETO's fits and GETO "
                "solves: a count, so the verdict does not depend on the machine's speed."
            ),
            paper_value="qualitative (scales where the full LP does not)",
            metric="full_memory_over_budget_geto_fits_largest",
            comparison="==",
            target=1.0,
            tiers=("small", "paper"),
            no_control=(
                "A deterministic count of both formulations' nonzeros against the budget: the "
                "full LP is the comparison itself, and the claim fails wherever the full LP "
                "fits (as it does at the small tier's largest grid)."
            ),
            diagnostics=("largest_N", "full_est_gb_largest"),
        ),
        Claim(
            id="beats_entropic",
            kind="check",
            statement=(
                "GETO's barycenter, evaluated exactly with ot.emd2, is no worse than any "
                "entropic barycenter (optimal by construction: a sanity check)."
            ),
            paper_value="better than entropic solvers",
            metric="entropic_min_rel_excess",
            comparison=">=",
            target=0.0,
            tolerance=1e-9,
            tiers=("small", "paper"),
        ),
        Claim(
            id="entropic_blur",
            statement=(
                "Entropic barycenters are blurred: their support (bins > 1e-8) is at least "
                "3x GETO's."
            ),
            paper_value="sharper barycenters (spec: >= 3x support)",
            metric="entropic_min_support_ratio",
            comparison=">=",
            target=3.0,
            tiers=("small", "paper"),
            control="exact_lp_min_support_ratio",
            diagnostics=("entropic_min_support_ratio_largest_reg",),
        ),
        Claim(
            id="recolor_quota",
            kind="check",
            statement=(
                "Recolouring each image through its recovered plan by quota allocation "
                "gives a histogram within L1 2 x (#bins)/(#pixels) of the barycenter palette "
                "(rounding only); reported as L1 / bound."
            ),
            paper_value="colour palette manipulation (qualitative)",
            metric="recolor_max_l1_ratio",
            comparison="<=",
            target=1.0,
            tiers=("small", "paper"),
        ),
    ),
    deviations=(
        "Only the abstract is available: the layered formulation (Auricchio et al. 2018's "
        "(d+1)-partite flow extended to barycenters) and the plan recovery by composing "
        "row-normalised layers are our reading of it.",
        "The medical-data averaging is replaced by synthetic organ-like densities (deformed "
        "ellipses with an inner structure, 5 subjects); labelled as a substitute.",
        "Colour palettes use scikit-learn's two sample photos plus palette-shifted copies "
        "(rolled RGB channels), 8^3 bins at small tier.",
        "Both LPs are solved by HiGHS via scipy.optimize.linprog at feasibility tolerance "
        "1e-9 with one documented setting, solver='auto' (dual simplex on small models, "
        "interior point with crossover from 5,000 variables), and both with an exact support "
        "reduction not in the abstract (the barycenter restricted to a box that holds every "
        "optimal one, arcs no optimal flow can use left out; same optimum); the size checks "
        "count the whole formulations. POT's LP barycenter runs at "
        "its own default (interior point); entropic baselines are POT's log-domain Sinkhorn and "
        "convolutional barycenters on the unit-cube grid.",
        "Synthetic densities are truncated at 1e-5 of their peak: HiGHS leaves masses below "
        "its feasibility tolerance unmatched.",
        "Time and memory are measured in separate passes. Seconds are CPU seconds of model "
        "build + scipy's linprog (hand-off to HiGHS, HiGHS, hand-back) without tracemalloc. "
        "The over-budget claim is judged on the memory estimate (nonzeros x bytes per "
        "nonzero), a count; the time limit only guards the run.",
        "Peak memory is tracemalloc's (Python/NumPy side) in a second call with a 1 ms HiGHS "
        "time limit: model build, scipy's conversion and hand-off of the model, HiGHS's "
        "return; not a full solve's solution lists, not HiGHS's C++ memory (tracemalloc "
        "slows the hand-off about tenfold, so a traced full solve would distort both "
        "numbers). The benchmark also reports nnz, variables and a child's peak RSS.",
        "The full LP runs only under an 8 GB memory budget estimated from its nonzero count "
        "before building, and a generous wall-clock guard (HiGHS's limit is wall-clock, so a "
        "tight one would make verdicts depend on machine load); if it ever hits the guard "
        "its time is a lower bound and the GETO/full time ratio an upper bound.",
    ),
    tiers=(
        ("smoke", "an 8x8 grid with M = 2 and a 1-D instance; entropic reg 1e-2; seconds"),
        ("small", "2-D shapes at 16^2, 24^2, 32^2 (M = 3), organs 16^2 (M = 5), RGB palettes "
                  "8^3 (M = 3); full LP under an 8 GB memory estimate (a 30 min "
                  "wall-clock guard); a couple of minutes of CPU"),
        ("paper", "2-D up to 128^2 with M = 10, organs 64^2, palettes 16^3 (M = 4); full LP "
                  "under 1 h / 64 GB; hours, not run here"),
    ),
)
