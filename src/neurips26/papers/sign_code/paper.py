"""sign_code: metadata and claims (standard library and the registry only)."""

from neurips26.registry import Claim, Paper, Resources

PAPER = Paper(
    slug="sign_code",
    title="The sign code: classification from the binary pattern of neuron signs",
    seed="004_839af22534344a66.txt",
    paragraph=7,
    field="deep learning theory / interpretability",
    grade="B",
    summary=(
        "Each hidden unit's output splits into a sign and a magnitude; the concatenated "
        "signs of all units are the network's sign code. For classifiers with "
        "sign-preserving activations a k-nearest-neighbour classifier on the sign code "
        "alone matches the model; replacing every magnitude by noise barely changes a "
        "residual network's accuracy while flipping 20% of signs destroys it; models "
        "generalise when same-class inputs share sign codes, and a regulariser that "
        "breaks the sharing keeps training accuracy while test accuracy collapses; the "
        "sign-only part of each logit margin grows like sqrt(d) in width d."
    ),
    claims=(
        Claim(
            id="knn_matches_model",
            statement=(
                "A kNN on the binary sign code is about as accurate as the full model, for "
                "every sign-preserving model (worst model's accuracy minus its kNN's)."
            ),
            paper_value="comparable accuracy (spec: gap <= 3 points)",
            metric="knn_gap_max",
            comparison="<=",
            target=0.03,
            tiers=("small", "paper"),
            control="knn_gap_relu",
        ),
        Claim(
            id="magnitudes_barely_matter",
            statement=(
                "Replacing every magnitude in every layer of a residual network by random "
                "noise, keeping the signs, barely changes its accuracy."
            ),
            paper_value="barely changes (spec: drop <= 3 points)",
            metric="resnet_magnitude_drop",
            comparison="<=",
            target=0.03,
            tiers=("small", "paper"),
            control="resnet_flip_drop",
            diagnostics=("resnet_diag_drop_base", "resnet_diag_drop_wide",
                         "resnet_diag_drop_long", "resnet_diag_acc_base",
                         "resnet_diag_acc_wide", "resnet_diag_acc_long",
                         "resnet_diag_drop_bn_recal", "resnet_diag_drop_noskip",
                         "resnet_diag_acc_noskip", "resnet_diag_drop_tanh",
                         "resnet_diag_acc_tanh", "resnet_diag_drop_nonorm",
                         "resnet_diag_acc_nonorm", "mlp_norm_diag_drop_leaky_relu",
                         "mlp_plain_diag_drop_leaky_relu", "mlp_norm_diag_drop_tanh",
                         "mlp_plain_diag_drop_tanh", "resnet_diag_next_sign_kept_base",
                         "resnet_diag_next_sign_kept_noskip",
                         "resnet_diag_last_sign_kept_base",
                         "resnet_diag_last_sign_kept_noskip"),
        ),
        Claim(
            id="flips_destroy",
            statement="Flipping 20% of the signs reduces every model's accuracy to chance.",
            paper_value="chance (spec: <= chance + 10 points = 0.2)",
            metric="flip_acc_max",
            comparison="<=",
            target=0.2,
            tiers=("small", "paper"),
            control="unflipped_acc_max",
            diagnostics=("flip_acc_max_resnet", "flip_acc_max_mlp", "flip_acc_deep",
                         "flip_acc_deep_base", "flip_acc_width_narrowest",
                         "flip_acc_width_widest"),
        ),
        Claim(
            id="regulariser_collapses_test",
            statement=(
                "Disrupting same-class overlap with a regulariser keeps training accuracy "
                ">= 95% while test accuracy collapses (to at most half the unregularised)."
            ),
            paper_value="test performance collapses (spec: ratio <= 0.5)",
            metric="reg_test_ratio",
            comparison="<=",
            target=0.5,
            tiers=("small", "paper"),
            no_control=(
                "A ratio against the same network trained on the same data without the "
                "penalty (mu = 0), which is the comparison itself; regulariser_breaks_overlap "
                "checks that the penalty did what it is built to do."
            ),
            diagnostics=("reg_knn_acc", "reg_knn_acc_base", "reg_test_ratio_strong",
                         "reg_train_acc_strong"),
        ),
        Claim(
            id="regulariser_breaks_overlap",
            statement=(
                "At that regularisation the same-class overlap gap falls to at most a third "
                "of the unregularised model's."
            ),
            paper_value="overlap disrupted (spec: gap ratio <= 1/3)",
            metric="reg_gap_ratio",
            comparison="<=",
            target=1 / 3,
            tiers=("small", "paper"),
            kind="check",
        ),
        Claim(
            id="overlap_predicts_generalisation",
            statement=(
                "Generalisation tracks same-class sign-code overlap: Spearman correlation "
                "of overlap gap and test accuracy over all trained models."
            ),
            paper_value="models generalise when codes overlap (spec: Spearman > 0.7)",
            metric="overlap_spearman",
            comparison=">",
            target=0.7,
            tiers=("small", "paper"),
            control="overlap_spearman_dataset_only",
            diagnostics=("overlap_spearman_within_dataset_min",),
        ),
        Claim(
            id="sign_margin_sqrt_d",
            statement=(
                "The sign-only part of the margin grows like sqrt(d): the slope of "
                "log E|m_sign| on log d is 0.5 (metric: slope - 0.5)."
            ),
            paper_value="sqrt(d) (spec: slope 0.5 +/- 0.15)",
            metric="margin_slope_error",
            comparison="abs<=",
            target=0.15,
            tiers=("small", "paper"),
            control="untrained_margin_slope_error",
        ),
        Claim(
            id="sign_part_dominates_more",
            statement="E|m_sign| / E|m_res| increases with width at every step of the sweep.",
            paper_value="sign part dominates the magnitude residual",
            metric="margin_ratio_increasing",
            comparison=">=",
            target=1,
            tiers=("small", "paper"),
            control="untrained_margin_ratio_increasing",
        ),
        Claim(
            id="knn_equals_sklearn",
            statement=(
                "Our Hamming kNN predicts as scikit-learn's KNeighborsClassifier "
                "(metric='hamming') wherever the nearest neighbour is unique."
            ),
            paper_value="oracle",
            metric="check_knn_sklearn_agreement",
            comparison=">=",
            target=1.0,
            kind="check",
        ),
        Claim(
            id="true_magnitudes_identity",
            statement="'Randomising' with the true magnitudes reproduces the logits exactly.",
            paper_value="oracle",
            metric="check_true_magnitudes_max_diff",
            comparison="<=",
            target=1e-6,
            kind="check",
        ),
        Claim(
            id="flip_fraction",
            statement="The flipped share at every site is within 3 binomial SE of f.",
            paper_value="construction",
            metric="check_flip_fraction_max_z",
            comparison="<=",
            target=3.0,
            kind="check",
        ),
        Claim(
            id="margin_parts_sum",
            statement="sign part + residual equals the margin (to 1e-6).",
            paper_value="identity",
            metric="check_margin_sum_error",
            comparison="<=",
            target=1e-6,
            kind="check",
        ),
    ),
    deviations=(
        "Data: stratified subsets of real MNIST and Fashion-MNIST (digits upsampled to 16x16 "
        "at the smoke tier); CIFAR is not available offline, so the paper's CIFAR-scale "
        "ResNets are not run.",
        "The ResNet is a small hand-written pre-activation ResNet (3 stages); at the small "
        "tier it sees 2x2-average-pooled 14x14 images with channels (8, 16, 32).",
        "Sign flips are independent per unit and input with probability f; magnitude noise "
        "is |N(0, sigma_l^2)| with sigma_l the site's training RMS (both inferred).",
        "The regulariser's form (cosine of tanh(z/tau) over same-class pairs) and the margin "
        "constant a_bar (mean magnitude per input) are inferred.",
        "Short training at the small tier (hundreds of steps), not to convergence.",
        "Controls (ours): the ReLU models for the sign-code kNN; the ResNet's drop under 20% "
        "sign flips for the magnitude claim; the unflipped accuracy for the flip claim; "
        "each model's data set's mean overlap gap for the overlap correlation (what pooling "
        "data sets alone gives); the same widths untrained for the margin scaling.",
    ),
    tiers=(
        ("smoke", "digits 16x16, MLP width 64 (LeakyReLU, ReLU), a tiny ResNet, 60 steps"),
        ("small", "MNIST and Fashion-MNIST subsets (4k/1k), MLPs (LeakyReLU, tanh, ReLU) "
                  "width 256 and a small ResNet, 2 seeds, widths 64-512, 3 penalties"),
        ("paper", "full MNIST and Fashion-MNIST, all activations, width 512, ResNet "
                  "(16, 32, 64) on 28x28, widths to 1024, 5 seeds; not run here"),
    ),
    resources=Resources(gpu=1),  # training can run on --device cuda
)
