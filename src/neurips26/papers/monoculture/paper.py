"""Metadata and claims of the monoculture paper (standard library only)."""

from neurips26.registry import Claim, Paper

PAPER = Paper(
    slug="monoculture",
    title="Monoculture is in the eye of the null model: excess agreement between models",
    seed="004_839af22534344a66.txt",
    paragraph=1,
    field="ML evaluation / algorithmic fairness (measurement)",
    grade="B",
    summary=(
        "Claims that models err on the same items far more than chance ('monoculture') are "
        "inferences relative to a null model of independence. The paper re-runs earlier "
        "analyses with a null that includes item difficulty, finds the apparent excess "
        "agreement largely disappears on one dataset, and formalises that a monoculture "
        "verdict depends on (1) the null (accuracy-only vs item-difficulty aware) and (2) the "
        "population of models and items the null is fitted on. We implement the measurement: "
        "accuracy, Rasch (1PL) and 2PL nulls fitted by penalised joint maximum likelihood, "
        "closed-form expected co-error, parametric and resampling bootstraps, tetrachoric "
        "residual correlations and population-sensitivity analyses."
    ),
    claims=(
        Claim(
            id="accuracy_null_manufactures_monoculture",
            statement="With no residual dependence (Sigma = I) but varying item difficulty, the "
            "accuracy-only null reports positive excess agreement (its 95% CI lies above 0).",
            paper_value="qualitative",
            metric="synth_accuracy_ci_low",
            comparison=">",
            target=0.0,
            tiers=("small", "paper"),
            control="synth_equal_difficulty_accuracy_ci_low",
        ),
        Claim(
            id="rasch_null_removes_it",
            kind="check",
            statement="On the same data the Rasch (item-difficulty) null's 95% CI of the mean "
            "excess contains 0 (metric: distance from 0 to the CI).",
            paper_value="an identity of the estimator: given the item totals, which fix the "
            "difficulties, a difficulty-aware null removes the mean excess on any data",
            metric="synth_rasch_ci_distance_to_zero",
            comparison="<=",
            target=0.0,
            tiers=("small", "paper"),
        ),
        Claim(
            id="difficulty_null_removes_most_real_excess",
            statement="On at least one real dataset the item-difficulty null removes most "
            "apparent monoculture: 1 - mean_excess(rasch)/mean_excess(accuracy) >= 0.7 "
            "(zoo of scikit-learn classifiers; max over bundled datasets).",
            paper_value="monoculture 'virtually disappears' on one dataset",
            metric="zoo_max_reduction",
            comparison=">=",
            target=0.7,
            tiers=("small", "paper"),
            control="planted_reduction",
        ),
        Claim(
            id="planted_dependence_recovered",
            kind="check",
            statement="Real residual dependence remains detectable: the tetrachoric rho over "
            "a planted block (rho = 0.5, 5 models) is recovered within +/- 0.12.",
            paper_value="spec oracle (rho = 0.5 +/- 0.12)",
            metric="planted_rho_error",
            comparison="abs<=",
            target=0.12,
            tiers=("small", "paper"),
        ),
        Claim(
            id="unplanted_pairs_near_zero",
            kind="check",
            statement="Unplanted pairs show mean |rho| below 0.06.",
            paper_value="spec oracle (< 0.06)",
            metric="unplanted_abs_rho_mean",
            comparison="<",
            target=0.06,
            tiers=("small", "paper"),
        ),
        Claim(
            id="model_population_changes_verdict_zoo",
            statement="Adding 6 bootstrap clones of model A to the population changes the "
            "Rasch-null excess of (A, B) by more than the sum of the two bootstrap standard "
            "errors (zoo on digits; metric |change| / (se1 + se2)).",
            paper_value="qualitative",
            metric="zoo_digits_clone_shift_ratio",
            comparison=">",
            target=1.0,
            tiers=("small", "paper"),
            control="zoo_digits_shuffled_clone_shift_ratio",
            diagnostics=("zoo_digits_clone_shift_paired",),
        ),
        Claim(
            id="model_population_changes_verdict_synthetic",
            statement="The same on synthetic data with a planted (A, B) dependence and 6 "
            "near-duplicates of A.",
            paper_value="qualitative",
            metric="synth_clone_shift_ratio",
            comparison=">",
            target=1.0,
            tiers=("small", "paper"),
            control="synth_independent_shift_ratio",
            diagnostics=("synth_clone_shift_paired", "synth_clone_shift_ratio_more_clones"),
        ),
        Claim(
            id="item_population_changes_verdict",
            statement="Under the accuracy null the mean excess on easy items and on hard items "
            "(split at the median fitted Rasch difficulty) have non-overlapping 95% CIs "
            "(metric: gap between the intervals; > 0 means no overlap). Zoo on digits.",
            paper_value="qualitative",
            metric="zoo_item_split_separation",
            comparison=">",
            target=0.0,
            tiers=("small", "paper"),
            control="zoo_random_item_split_separation",
        ),
    ),
    deviations=(
        "The paper's LLM correctness matrices are not available offline; a zoo of 22 "
        "scikit-learn classifiers scored out-of-fold on bundled datasets, synthetic probit-1PL "
        "populations and the benchbench ImageNet per-class accuracy table stand in.",
        "The Rasch and 2PL nulls are fitted by penalised joint ML (ridge 0.1 on the "
        "difficulties' deviations from their mean, weaker than the spec's 0.25, which shrinks "
        "the difficulties and leaves a small positive bias in the Rasch mean excess; "
        "1.0 on log discriminations) with damped Newton / Fisher scoring (inferred estimator).",
        "The raw excess under a refitted null is biased (joint-ML difficulties absorb part of "
        "each item's co-errors); we subtract the mean excess of parametric bootstrap draws, "
        "simulated from a generator that is itself bias-corrected by one bootstrap step. A "
        "conditional (item-total) Rasch expectation is offered as an option.",
        "Residual correlation: bivariate-probit (tetrachoric) likelihood under a probit Rasch "
        "refit (the simulator's link), item difficulties refitted leaving the pair out with an "
        "empirical-Bayes prior, and their posterior variance integrated out (inferred).",
        "Controls (the claim's statistic where the effect must be absent): the accuracy "
        "null on a population whose items share one difficulty; the accuracy-to-Rasch "
        "reduction on the synthetic population with a planted dependent block (shared "
        "errors a null should keep); six added models independent of A (synthetic) or the "
        "clones' rows with their items shuffled (zoo); two random halves of the items "
        "instead of the easy and hard halves.",
        "Same-wrong-answer null: distractor frequencies of the other models (inferred).",
        "Aggregate tables (ImageNet per-class accuracy) identify only between-class agreement: "
        "within a class, models are assumed independent.",
    ),
    tiers=(
        ("smoke", "8 x 200 synthetic models/items, 20 bootstraps, a 10-model zoo on wine"),
        ("small", "20 x 2000 synthetic with/without a planted block (accuracy and Rasch nulls; 2PL "
                  "at paper tier), 22-model zoo (+6 clones) on "
                  "digits and breast cancer, 200 bootstraps, 300 ImageNet classes (benchbench)"),
        ("paper", "as small with the zoo on digits, breast cancer and wine, 1000 bootstraps, all "
                  "1000 ImageNet classes; the paper's LLM data are not available offline"),
    ),
)
