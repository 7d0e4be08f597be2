"""ecfr: metadata and claims (standard library and the registry only)."""

from neurips26.registry import Claim, Paper, Resources

PAPER = Paper(
    slug="ecfr",
    title="ECFR: efficient cross-modal feature reconstruction for unified multi-class "
    "RGB+3D anomaly detection",
    seed="000_23679aaaf2254bad.txt",
    paragraph=6,
    field="computer vision (industrial anomaly detection, multimodal)",
    grade="C",
    summary=(
        "A unified anomaly detector serves many object categories with one model, but the "
        "capacity this needs lets it reconstruct anomalies too (the identical shortcut). "
        "ECFR reconstructs each modality's frozen features (RGB, depth) from the other "
        "modality through an Adaptive Feature Interaction and Recalibration (AFIR) module "
        "and Hybrid Attention Convolution (HAC) blocks; cross-modal reconstruction is hard, "
        "so anomalies fail to reconstruct. State of the art on MVTec 3D-AD and Eyecandies "
        "with 44.63 M parameters and 15.77 GFLOPs."
    ),
    claims=(
        Claim(
            id="cross_beats_same_image",
            statement=(
                "Cross-modal reconstruction beats same-modality reconstruction with the "
                "identical body in the unified multi-class setting: mean image AUROC of "
                "ECFR minus the same-modality baseline's."
            ),
            paper_value="cross-modal > same-modal (spec: >= +0.02 I-AUROC)",
            metric="i_auroc_gain_vs_same",
            comparison=">=",
            target=0.02,
            tiers=("small", "paper"),
            control="fused_i_auroc_gain_vs_same",
        ),
        Claim(
            id="cross_beats_same_pixel",
            statement="As above for pixel AUROC (ECFR minus the same-modality baseline).",
            paper_value="cross-modal > same-modal (spec: >= +0.02 P-AUROC)",
            metric="p_auroc_gain_vs_same",
            comparison=">=",
            target=0.02,
            tiers=("small", "paper"),
            control="fused_p_auroc_gain_vs_same",
        ),
        Claim(
            id="shortcut_suppressed",
            statement=(
                "The identical shortcut is suppressed: the ratio r of mean reconstruction "
                "error on anomalous to normal pixels is at least 1.3 times the "
                "same-modality model's (metric: r(ECFR) / r(same))."
            ),
            paper_value="anomalies fail to reconstruct (spec: ratio >= 1.3)",
            metric="shortcut_ratio_gain",
            comparison=">=",
            target=1.3,
            tiers=("small", "paper"),
            control="fused_shortcut_ratio_gain",
        ),
        Claim(
            id="competitive_with_cfm",
            statement="ECFR's mean image AUROC minus CFM's (crossmodal feature mapping).",
            paper_value="state of the art (spec: >= CFM - 0.01)",
            metric="i_auroc_gain_vs_cfm",
            comparison=">=",
            target=-0.01,
            tiers=("small", "paper"),
            control="same_i_auroc_gain_vs_cfm",
        ),
        Claim(
            id="competitive_with_patchcore",
            statement=(
                "ECFR's mean image AUROC minus the per-class PatchCore kNN's (not unified)."
            ),
            paper_value="state of the art (spec: >= PatchCore - 0.03)",
            metric="i_auroc_gain_vs_patchcore",
            comparison=">=",
            target=-0.03,
            tiers=("small", "paper"),
            control="same_i_auroc_gain_vs_patchcore",
        ),
        Claim(
            id="afir_matters",
            statement=(
                "AFIR matters: removing it lowers ECFR's mean pixel AUROC by at least the "
                "spec's 0.005 (full ECFR minus ECFR without AFIR, judged on its interval)."
            ),
            paper_value="the modules matter (spec: full >= ablation, tolerance 0.005; read "
                        "here as removing the module hurts by that margin)",
            metric="p_auroc_gain_vs_no_afir",
            comparison=">=",
            target=0.005,
            tiers=("small", "paper"),
            no_control=(
                "The claim is the paired difference against the ablation that removes "
                "exactly the module (ECFR without AFIR on the same features, data, steps "
                "and seed); that arm is the control, and the removal must hurt by the "
                "margin with its interval above it."
            ),
        ),
        Claim(
            id="hac_matters",
            statement=(
                "HAC matters: replacing it by plain convolution blocks lowers ECFR's mean "
                "pixel AUROC by at least the spec's 0.005 (judged on its interval)."
            ),
            paper_value="the modules matter (spec: full >= ablation, tolerance 0.005; read "
                        "here as removing the module hurts by that margin)",
            metric="p_auroc_gain_vs_no_hac",
            comparison=">=",
            target=0.005,
            tiers=("small", "paper"),
            no_control=(
                "The claim is the paired difference against the ablation that removes "
                "exactly the module (HAC replaced by plain convolutions, same features, "
                "data, steps and seed); that arm is the control, and the removal must hurt "
                "by the margin with its interval above it."
            ),
        ),
        Claim(
            id="fewer_params_than_cfm",
            statement=(
                "ECFR needs fewer parameters than a prior multimodal method (CFM's head "
                "parameters divided by ECFR's at equal features). Not checkable here: the "
                "paper's 44.63 M / 15.77 GFLOPs include backbones we cannot build, and at "
                "equal features the ratio follows from the widths we pick; the counts are "
                "reported for the record (benchmarks/ecfr.py)."
            ),
            paper_value="44.63 M params, fewer than prior multimodal methods",
            metric="params_ratio_cfm_over_ecfr",
            comparison=">=",
            target=1.0,
            tiers=(),  # not checkable: the verdict would follow from our choice of widths
            no_control=(
                "Not judged at any tier: an exact count at equal features, fixed by the "
                "widths we choose, with no sampling and no arm where the effect is absent."
            ),
        ),
        Claim(
            id="fewer_flops_than_cfm",
            statement=(
                "ECFR needs fewer FLOPs per image than CFM at equal features (counted with "
                "torch.utils.flop_counter; CFM's divided by ECFR's). Not checkable, as above."
            ),
            paper_value="15.77 GFLOPs, lower than prior multimodal methods",
            metric="flops_ratio_cfm_over_ecfr",
            comparison=">=",
            target=1.0,
            tiers=(),  # not checkable: the verdict would follow from our choice of widths
            no_control=(
                "Not judged at any tier: an exact FLOP count at equal features, fixed by "
                "the widths we choose, with no sampling and no arm where the effect is "
                "absent."
            ),
        ),
        Claim(
            id="auroc_equals_sklearn",
            statement="Our image and pixel AUROC equal sklearn's roc_auc_score on this run's "
            "ECFR scores (max absolute difference).",
            paper_value="oracle",
            metric="check_auroc_sklearn_diff",
            comparison="<=",
            target=1e-12,
            kind="check",
        ),
        Claim(
            id="aupro_equals_reference",
            statement="Our sorted-cumsum AUPRO equals a per-threshold reference implementation "
            "on this run's ECFR maps (coarsely quantised so thresholds are few).",
            paper_value="oracle",
            metric="check_aupro_reference_diff",
            comparison="<=",
            target=1e-9,
            kind="check",
        ),
        Claim(
            id="strict_isolation",
            statement="In strict mode the gradient of rgb_hat with respect to f_rgb (and of "
            "depth_hat w.r.t. f_depth) is exactly zero.",
            paper_value="construction",
            metric="check_strict_grad_max",
            comparison="<=",
            target=0.0,
            kind="check",
        ),
        Claim(
            id="real_depth_holes_filled",
            statement="The real motorcycle RGB-D scene has depth holes, which are refused "
            "without fill_holes and filled with it (detector on real crops gives finite "
            "scores: 1 = yes).",
            paper_value="construction",
            metric="check_real_scene_ok",
            comparison=">=",
            target=1.0,
            kind="check",
        ),
    ),
    deviations=(
        "Data: procedural RGB+depth objects (5 classes of height fields with dent, bump, "
        "stain and crack anomalies) replace MVTec 3D-AD and Eyecandies (not available "
        "offline); scikit-image's real motorcycle stereo pair tests depth handling.",
        "Backbones: the ImageNet-pretrained EfficientNet-lite0 (blocks at stride 4 and 8) "
        "for RGB and a small conv encoder trained as a denoising autoencoder on normal "
        "depth maps replace the paper's pretrained RGB and point-cloud transformers; "
        "depth is a 2.5D map, not a point cloud.",
        "AFIR (CBAM-style cross-modal channel and spatial gating) and HAC (depthwise conv "
        "in parallel with window attention) are inferred from their names.",
        "Params/FLOPs: only the heads on equal features are compared; the paper's 44.63 M / "
        "15.77 GFLOPs include backbones we cannot build.",
        "Short training (hundreds of steps) at 64x64 on CPU.",
    ),
    tiers=(
        ("smoke", "2 classes, 8 train / 4 test images each, 32x32, 20 steps, 1 seed"),
        ("small", "5 classes, 64x64, 2 seeds, short training of every head"),
        ("paper", "the paper's scale: more images and steps, 5 seeds (MVTec 3D-AD / "
                  "Eyecandies with the paper's backbones need local data); not run here"),
    ),
    resources=Resources(gpu=1),
)
