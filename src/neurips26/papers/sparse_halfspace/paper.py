"""Registry entry for sparse_halfspace (standard library and neurips26.registry only)."""

from neurips26.registry import Claim, Paper

_SMALL = ("small", "paper")

PAPER = Paper(
    slug="sparse_halfspace",
    title="Attribute-efficient learning of s-sparse halfspaces under constant malicious noise",
    seed="000_23679aaaf2254bad.txt",
    paragraph=4,
    field="learning theory (robust PAC learning)",
    grade="A",
    summary=(
        "An adversary replaces a constant fraction eta of the samples (features and labels). "
        "Under a concentration and a margin condition, an efficient algorithm learns an "
        "s-sparse halfspace in R^d from O(s^2 log^5 d) samples: an L-infinity filter, soft "
        "outlier removal that caps the weighted second moment over the sparsity-inducing set "
        "W = {||w||_2 <= 1, ||w||_1 <= sqrt(s)}, and weighted hinge-loss minimisation over W; "
        "an information-theoretic lower bound shows the rate is nearly optimal "
        "(Zeng & Shen, arXiv 2505.21430, building on Shen, arXiv 2410.01186)."
    ),
    claims=(
        Claim(
            id="attribute_efficiency",
            statement=(
                "The sample need grows only polylogarithmically with d: our learner's "
                "n_eps(d=400) / n_eps(d=50) stays small (eps = 0.05, s = 3, eta = 0)."
            ),
            paper_value="O(s^2 log^5 d) samples; spec: ratio <= 2.5",
            metric="growth_ours",
            comparison="<=",
            target=2.5,
            tiers=_SMALL,
            control="growth_dense",
        ),
        Claim(
            id="dense_not_attribute_efficient",
            statement=(
                "The L2-ball-only variant (Shen's dense algorithm) needs samples growing with d: "
                "n_eps(d=400) / n_eps(d=50) is large (a lower bound when censored at n_max)."
            ),
            paper_value="Omega(d) for dense learners; spec: ratio >= 4",
            metric="growth_dense",
            comparison=">=",
            target=4.0,
            tiers=_SMALL,
            control="growth_ours",
        ),
        Claim(
            id="sample_need_sparsity",
            statement=(
                "The sample need grows at most quadratically in the sparsity s: the log-log "
                "slope of n_eps between the smallest and largest scanned s (d = 100, "
                "eps = 0.05, eta = 0) is at most 2."
            ),
            paper_value="O(s^2 log^5 d) samples: exponent 2 in s",
            metric="sparsity_slope_ours",
            comparison="<=",
            target=2.0,
            tiers=_SMALL,
            no_control=(
                "An upper bound on the exponent in s: any learner whose sample need grows "
                "more slowly meets it too, and no learner at hand must exceed s^2, so there "
                "is no setting where the same slope must fail the bar."
            ),
        ),
        Claim(
            id="robust_error",
            statement=(
                "At a constant noise rate eta = 0.1 (flip-cluster adversary, d = 200, "
                "n = 4 n_eps(eta = 0)) the mean clean error stays small."
            ),
            paper_value="error <= eps under constant eta (theorem); spec: error <= 0.1",
            metric="error_ours_claim_eta",
            comparison="<=",
            target=0.1,
            tiers=_SMALL,
            control="error_no_reweighting_claim_eta",
        ),
        Claim(
            id="beats_baselines",
            statement=(
                "In the same setting every baseline (no reweighting, L2 ball only, LinearSVC, "
                "L1-logistic regression) has at least 1.5 times our mean error (errors below "
                "0.001 count as 0.001), tested without dividing by our near-zero error: the "
                "smallest over baselines of the mean paired difference, baseline error minus "
                "1.5 times ours on the same draw, is at least 0."
            ),
            paper_value="qualitative; spec: min baseline/ours ratio >= 1.5",
            metric="baseline_error_excess_min",
            comparison=">=",
            target=0.0,
            tiers=_SMALL,
            no_control=(
                "The claim is the comparison with the named baselines on the same draws: "
                "the baselines are the reference the effect is measured against, and the "
                "paired difference over draws is the test."
            ),
        ),
        Claim(
            id="outlier_removal_downweights",
            kind="check",
            statement=(
                "Soft outlier removal (round 0, variance cap from the analysis) leaves at most "
                "half of the corrupted points' weight: mass on corrupted rows after "
                "reweighting <= eta / 2 (it starts at about eta), against a flip cluster of "
                "scale 4, close to the cap's detection edge."
            ),
            paper_value="mechanism of the analysis; spec: after/before <= 0.5",
            metric="corrupt_weight_over_eta",
            comparison="<=",
            target=0.5,
            tiers=_SMALL,
        ),
        Claim(
            id="filter_removes_large_norm",
            kind="check",
            statement=(
                "The L-infinity filter removes at least 95% of large-norm attack points "
                "(spikes of 1.75 times the clean sample's typical largest coordinate)."
            ),
            paper_value="mechanism; spec: >= 0.95",
            metric="filter_removed_frac",
            comparison=">=",
            target=0.95,
            tiers=_SMALL,
        ),
        Claim(
            id="filter_keeps_clean",
            kind="check",
            statement="The L-infinity filter keeps at least 99% of the clean points.",
            paper_value="mechanism (clean points pass the filter w.h.p.)",
            metric="filter_clean_kept_frac",
            comparison=">=",
            target=0.99,
            tiers=_SMALL,
        ),
        Claim(
            id="lower_bound",
            statement=(
                "Information-theoretic sample lower bound under the same conditions: the "
                "O(s^2 log^5 d) rate is nearly optimal. Theoretical; not checked by experiment."
            ),
            paper_value="theorem (no verdict computed)",
            metric="lower_bound_not_checked",
            comparison=">=",
            target=1.0,
            tiers=(),
            no_control=(
                "A theorem (an information-theoretic lower bound) that no experiment of ours "
                "measures: there is no statistic to control, and the claim is never run."
            ),
        ),
    ),
    deviations=(
        "Localisation rounds (Awasthi, Balcan & Long; Shen) with inferred schedule: round 0 "
        "on all points, then T = 3 bands |<w_{t-1}, x>| <= b_t with b_1 = 1, ball radius "
        "r_1 = 1/2, both halved per round, hinge scale tau_t = b_t, hard thresholding to s "
        "coordinates per round; each round reuses the whole sample (no sample splitting).",
        "Constants inferred from the analysis: filter level sqrt(2 log(2 n d / 0.05)) (union "
        "bound); variance cap 1 + xi log(1/xi) + sqrt(s log d / n) per round; removable "
        "fraction xi = 2 eta (2 eta / P(band) in a band, at most 1/2); learners assume "
        "eta = 0.15.",
        "Round 0's hinge scale is tau_0 = 1, not the data margin gamma = 0.1: at tau = gamma "
        "the clean sample is separable with zero loss, the minimisers form a face and the "
        "interior-point solver returns a dense central point.",
        "The sup over W in soft outlier removal is relaxed to the d'Aspremont et al. sparse-PCA "
        "SDP (solved with SCS) inside a cutting-plane loop (SDP cut + QP for the weights "
        "closest to uniform); above d = 60 a power method over W replaces the SDP and the fit "
        "is reported as uncertified.",
        "The sample-need scan uses the power-method oracle at every d (the SDP relaxation is "
        "much looser than the sparse maximum when n < d, which would penalise d = 50 alone); "
        "a fit whose weight program is infeasible (n too small for the cap) counts as a "
        "random guess. n_eps is the median of per-seed first crossings. The certified SDP fit "
        "is checked separately at d = 50.",
        "The dense reference (Shen's algorithm, L2 ball) is single-round, with the same cap "
        "formula at s = d (close to the Marchenko-Pastur edge) and the exact eigenvalue oracle.",
        "Flip-cluster adversary designed by us (spec): x = 4 v + 0.1 g, v = cos(75 deg) w* + "
        "sin(75 deg) u with u on supp(w*), labels against w*. Large-norm attack: one spike of "
        "height 1.75 sqrt(2 log(n d)) added to a random coordinate of a clean point.",
        "Clean error computed exactly by a one-dimensional integral (not Monte Carlo).",
        "The lower bound is theoretical and not checked.",
    ),
    tiers=(
        ("smoke", "d in {10, 20}, s in {1, 2}, 2 seeds, n <= 300, eta = 0.1 at d = 20; seconds."),
        (
            "small",
            "s = 3, gamma = 0.1, eps = 0.05: sample-need scan over d in {50, 100, 200, 400} "
            "with 5 seeds (n <= 4500 for ours, <= 3200 for the L2-ball reference, grid factor "
            "1.4), and over s in {2, 4, 8} at d = 100 for ours; eta in {0, 0.05, 0.1, 0.15} at "
            "d = 200 with 3 seeds (5 at eta = 0.1) for ours, the ablation and three baselines; SDP "
            "cost at d in {20, 40, 60}; the certified SDP oracle once at d = 50 (3 draws at the "
            "paper tier); about 8 minutes of CPU time (the sample-need scans dominate).",
        ),
        (
            "paper",
            "d up to 1600, s up to 16 at d = 400, 9 seeds, eps = 0.02, n <= 20000, 7 noise "
            "rates with 10 seeds, SDP cost up to d = 100; not run here (expect hours on 2 "
            "cores).",
        ),
    ),
)
