"""arq_vae: metadata and claims (standard library and the registry only)."""

from neurips26.registry import Claim, Paper, Resources

PAPER = Paper(
    slug="arq_vae",
    title="ARQ-VAE: a label-free compact feature memory for temporal action segmentation "
          "by residual quantization with per-frame adaptive truncation",
    seed="000_23679aaaf2254bad.txt",
    paragraph=9,
    field="video understanding / temporal action segmentation",
    grade="C",
    summary=(
        "Temporal action segmentation trains on banks of pre-extracted frame features, "
        "whose storage is a bottleneck for long videos and for replay. ARQ-VAE learns a "
        "residual-quantized autoencoder over frame features without labels, keeps per "
        "frame only the prefix of the residual chain that best reconstructs it under a "
        "storage budget, and fine-tunes the decoder on the codes actually kept. On "
        "Breakfast it shrinks 28 GB of I3D features to 10 MB while ASFormer trained on "
        "the memory keeps 71.5 Edit and 51.2 F1@50."
    ),
    claims=(
        Claim(
            id="tradeoff",
            statement=(
                "At matched all-in bytes, MS-TCN trained on the ARQ-VAE memory reaches an "
                "F1@50 at least that of every baseline (fixed-depth RVQ, PCA + uint8, "
                "temporal subsampling, k-means; 0.5-point tolerance) on at least 2 of 3 "
                "budgets (metric: number of such budgets, means over seeds)."
            ),
            paper_value="substantially improved storage-performance trade-off",
            metric="budgets_arq_best",
            comparison=">=",
            target=2.0,
            tiers=("small", "paper"),
            no_control=(
                "The claim is a comparison against named baselines at matched all-in bytes "
                "(fixed-depth RVQ of the same model, PCA + uint8, temporal subsampling, "
                "k-means): each baseline is the arm without the method, and the claim "
                "passes only where the memory matches or beats every one of them."
            ),
            diagnostics=("bytes_arq_b26", "bytes_pca_b26"),
        ),
        Claim(
            id="extreme_compression",
            statement=(
                "At the smallest budget (1/27 of the float32 training features, all-in, "
                "at the small tier), F1@50 keeps at least 85% of F1@50 on the original "
                "features (metric: the ratio; simulator noise level 1.5)."
            ),
            paper_value="28 GB -> 10 MB (~1/2,800) keeping 71.5 Edit / 51.2 F1@50",
            metric="extreme_f1_ratio",
            comparison=">=",
            target=0.85,
            tiers=("small", "paper"),
            control="extreme_f1_ratio_kmeans",
        ),
        Claim(
            id="adaptivity_pays",
            statement=(
                "Per-frame adaptive truncation beats fixed-depth RVQ of the same model at "
                "the same bytes by at least 1 F1@50 point at the smallest budget."
            ),
            paper_value="adaptive per-frame prefixes (spec: >= 1 point)",
            metric="adaptive_minus_fixed_f1",
            comparison=">=",
            target=1.0,
            tiers=("small", "paper"),
            no_control=(
                "The claim is a paired difference against the named baseline that removes "
                "exactly the claimed ingredient: fixed-depth RVQ of the same trained model "
                "at the same bytes, fine-tuned the same way; that arm is the control."
            ),
        ),
        Claim(
            id="finetune_error",
            statement=(
                "Decoder fine-tuning on the retained codes lowers their relative "
                "reconstruction error by at least 10% (smallest budget)."
            ),
            paper_value="fine-tuning further improves reconstruction (spec: >= 10%)",
            metric="finetune_error_drop",
            comparison=">=",
            target=0.10,
            tiers=("small", "paper"),
            control="finetune_error_drop_shuffled",
            diagnostics=("finetune_error_drop_noise2",),
        ),
        Claim(
            id="finetune_f1",
            statement=(
                "Decoder fine-tuning does not lower F1@50 (tolerance 0.5 points; metric: "
                "F1@50 with minus without fine-tuning, smallest budget)."
            ),
            paper_value="fine-tuning improves the truncated memory",
            metric="finetune_f1_gain",
            comparison=">=",
            target=0.0,
            tolerance=0.5,
            tiers=("small", "paper"),
            control="finetune_f1_gain_shuffled",
        ),
        Claim(
            id="label_free_unsupervised",
            statement=(
                "The same label-free memory serves unsupervised segmentation (k-means, "
                "temporal smoothing, Hungarian matching): its Edit is within 3 points of "
                "the same pipeline on the original features (metric: memory - original)."
            ),
            paper_value="the memory stays effective for unsupervised TAS (spec: 3 points)",
            metric="unsup_edit_gap",
            comparison="abs<=",
            target=3.0,
            tiers=("small", "paper"),
            control="unsup_edit_gap_shuffled",
        ),
        Claim(
            id="extreme_compression_noise2",
            statement=(
                "The extreme-compression claim in the second simulator reading (noise level "
                "0.5, where reconstruction cannot gain by denoising the frames): F1@50 on "
                "the memory at the smallest budget keeps at least 85% of F1@50 on the "
                "original features."
            ),
            paper_value="28 GB -> 10 MB (~1/2,800) keeping 71.5 Edit / 51.2 F1@50",
            metric="extreme_f1_ratio_noise2",
            comparison=">=",
            target=0.85,
            tiers=("small", "paper"),
            control="extreme_f1_ratio_kmeans_noise2",
        ),
        Claim(
            id="finetune_error_noise2",
            statement=(
                "Decoder fine-tuning lowers the retained codes' relative reconstruction "
                "error by at least 10% (smallest budget) in the second simulator reading "
                "(noise level 0.5, a lower error floor)."
            ),
            paper_value="fine-tuning further improves reconstruction (spec: >= 10%)",
            metric="finetune_error_drop_noise2",
            comparison=">=",
            target=0.10,
            tiers=("small", "paper"),
            control="finetune_error_drop_shuffled_noise2",
            diagnostics=("finetune_error_drop",),
        ),
        Claim(
            id="finetune_f1_noise2",
            statement=(
                "Decoder fine-tuning does not lower F1@50 (tolerance 0.5 points, smallest "
                "budget) in the second simulator reading (noise level 0.5)."
            ),
            paper_value="fine-tuning improves the truncated memory",
            metric="finetune_f1_gain_noise2",
            comparison=">=",
            target=0.0,
            tolerance=0.5,
            tiers=("small", "paper"),
            control="finetune_f1_gain_shuffled_noise2",
        ),
        Claim(
            id="incremental",
            statement=(
                "The same label-free memory serves incremental TAS: MS-TCN learns task 1 "
                "(two activities), then task 2 (the other two) replaying task 1 from the "
                "ARQ-VAE memory (all-in budget 1/13 of task 1's float32 features); its "
                "F1@50 on task 1's test videos keeps at least 85% of the F1@50 reached "
                "with task 1's float32 features replayed (metric: the ratio)."
            ),
            paper_value="the same label-free memory remains effective for incremental TAS "
                        "(no figure in the abstract; 85% as in the extreme-compression claim)",
            metric="incr_f1_ratio",
            comparison=">=",
            target=0.85,
            tiers=("small", "paper"),
            control="incr_f1_ratio_noreplay",
            diagnostics=("incr_f1_task1_before", "incr_f1_task2_arq", "incr_plateau_fraction"),
        ),
        Claim(
            id="real_features",
            statement=(
                "On real EfficientNet-lite0 features of pans over real photos, a frame "
                "classifier trained on the memory (codes-only budget 1/1,024) keeps at "
                "least 85% of the accuracy of one trained on the original features."
            ),
            paper_value="transfers to another pretrained feature space (DINOv3)",
            metric="real_acc_ratio",
            comparison=">=",
            target=0.85,
            tiers=("small", "paper"),
            kind="check",
        ),
        Claim(
            id="truncation_argmin",
            statement="l*(t) of Eq. (1) equals a brute-force argmin for every frame "
                      "(metric: frames that differ).",
            paper_value="construction",
            metric="check_truncation_mismatch",
            comparison="==",
            target=0.0,
            kind="check",
        ),
        Claim(
            id="bytes_serialized",
            statement="The counted bytes equal the length of the serialized memory, "
                      "model included (metric: budgets where they differ).",
            paper_value="construction",
            metric="check_bytes_mismatch",
            comparison="==",
            target=0.0,
            kind="check",
        ),
        Claim(
            id="budget_respected",
            statement="No memory exceeds its budget, and a binding ARQ budget is met "
                      "within one frame's worth of bytes (metric: violations).",
            paper_value="construction",
            metric="check_budget_violations",
            comparison="==",
            target=0.0,
            kind="check",
        ),
        Claim(
            id="prefix_decoding",
            statement="Decoding stored codes at depth L equals the full forward "
                      "reconstruction (max abs difference).",
            paper_value="construction",
            metric="check_prefix_decode_error",
            comparison="<=",
            target=1e-5,
            kind="check",
        ),
    ),
    deviations=(
        "Procedural frame-feature videos (D = 256) replace Breakfast / 50Salads / GTEA I3D "
        "features (not available offline); a real-feature check runs on EfficientNet-lite0 "
        "features of pans over real photos.",
        "A small MS-TCN replaces ASFormer, trained to a held-out plateau (held-out loss "
        "evaluated every 25 steps; stop after 4 evaluations without a 1% improvement; best "
        "weights kept; step cap 1,500).",
        "Budgets 1/25, 1/26, 1/27 of float32, all-in, at the small tier: with the spec's "
        "d = 64 the codebooks and decoder alone are about 1/30 of the training set's "
        "float32 bytes, so the spec's 1/512 (and our earlier 1/128) is infeasible; the "
        "window where a budget is feasible and binding differs by seed and is common to "
        "all three seeds only between about 1/26 and 1/27.5 (1/25 keeps every level on "
        "some seeds). The incremental memory's 1/13 of task 1 is likewise near its model's "
        "size (about 1/15) and not binding on every seed.",
        "Two simulator readings: noise level 1.5 (the first) and 0.5 (claims 2 and 4 "
        "repeated as separate claims with the same targets).",
        "Incremental TAS (not in the spec): two tasks split by activity, replay of task 1 "
        "from the memory with its stored segment labels; the no-replay arm is the control; "
        "the 85% target is the extreme-compression claim's.",
        "Our own EMA residual VQ with quantize dropout (vector-quantize-pytorch's "
        "ResidualVQ is the test oracle); the rate-distortion truncation rule, the "
        "bisection and the byte layout are inferred.",
    ),
    tiers=(
        ("smoke", "8 videos of ~100 frames, D = 32, L = 4, K = 16, 20 steps, 2 budgets"),
        ("small", "80 procedural videos of ~400 frames (D = 256; 52 train, 8 held-out, 20 "
                  "test), L = 8, K = 256, d = 64, budgets 1/25-1/27 all-in, MS-TCN 2 "
                  "stages to a held-out plateau, 3 seeds, a second noise level (0.5), "
                  "incremental TAS, real-feature check on 8 videos"),
        ("paper", "400 videos of ~600 frames at D = 2048 (I3D width), d = 64, MS-TCN 4 "
                  "stages, budgets down to 1/2,048, 3 seeds; `--device cuda`; not run "
                  "here (Breakfast features need a local copy)"),
    ),
    resources=Resources(gpu=1),
)
