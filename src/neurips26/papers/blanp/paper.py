"""blanp: metadata and claims (standard library and the registry only)."""

from neurips26.registry import Claim, Paper, Resources

PAPER = Paper(
    slug="blanp",
    title="BLANP: backpropagation-free local antithetic node perturbation",
    seed="000_23679aaaf2254bad.txt",
    paragraph=3,
    link="https://github.com/anonymous/BLANP",
    field="learning algorithms (local / backprop-free training)",
    grade="B",
    summary=(
        "Each layer of a network is trained from signals available at that layer only: "
        "its pre-activation is perturbed by antithetic noise, both perturbed outputs are "
        "scored by a frozen exponential-moving-average copy of the layer's local "
        "classifier, and the central difference gives a first-order accurate gradient "
        "estimate from two forward passes. BLANP-Exact uses the exact local gradient under "
        "a stop-gradient instead. No gradient crosses a layer boundary, so activation "
        "memory does not grow with depth; BLANP matches backprop on MNIST and "
        "Fashion-MNIST, and on CIFAR-10 BLANP-Exact beats the best prior local method by "
        "2.40 points and trails backprop by 3.90."
    ),
    claims=(
        Claim(
            id="blanp_close_to_backprop",
            statement=(
                "BLANP matches backprop on MNIST and Fashion-MNIST, read as the spec reads "
                "'matches': each trained to a held-out plateau, the worst data set's mean "
                "paired accuracy gap (MLP) is within 5 points."
            ),
            paper_value="matches backprop (spec: within 5 points)",
            metric="blanp_minus_bp_min",
            comparison=">=",
            target=-0.05,
            tiers=("small", "paper"),
            control="untrained_minus_bp_min",
            diagnostics=("grad_cosine_blanp_exact", "plateau_fraction_blanp"),
        ),
        Claim(
            id="blanp_matches_backprop_1pt",
            statement=(
                "The stricter reading of 'matches': the same gap is within 1 point (the "
                "abstract gives no figure, so both readings are reported)."
            ),
            paper_value="matches backprop (no figure; read as within 1 point)",
            metric="blanp_minus_bp_min",
            comparison=">=",
            target=-0.01,
            tiers=("small", "paper"),
            control="untrained_minus_bp_min",
            diagnostics=("grad_cosine_blanp_exact", "plateau_fraction_blanp"),
        ),
        Claim(
            id="exact_close_to_backprop",
            statement="BLANP-Exact trails an identical backprop network by at most 3.90 points.",
            paper_value="-3.90 points (CIFAR-10)",
            metric="exact_minus_bp_min",
            comparison=">=",
            target=-0.039,
            tiers=("small", "paper"),
            control="untrained_minus_bp_min",
        ),
        Claim(
            id="exact_beats_blanp",
            statement=(
                "BLANP-Exact recovers gradient fidelity: it is at least as accurate as BLANP."
            ),
            paper_value="BLANP-Exact >= BLANP",
            metric="exact_minus_blanp_min",
            comparison=">=",
            target=0.0,
            tiers=("small", "paper"),
            control="untrained_minus_blanp_min",
        ),
        Claim(
            id="exact_beats_prior_local",
            statement=(
                "BLANP-Exact surpasses the best prior local learning method (our stand-in: "
                "DGL-style greedy learning) on a CNN (Fashion-MNIST here, CIFAR-10 in the paper)."
            ),
            paper_value="+2.40 points on CIFAR-10 (we test > 0 on Fashion-MNIST)",
            metric="exact_minus_dgl_cnn",
            comparison=">=",
            target=0.0,
            tiers=("small", "paper"),
            control="untrained_minus_dgl_cnn",
        ),
        Claim(
            id="ema_critic_stabilises",
            statement=(
                "The frozen EMA critic stabilises learning: BLANP's seed-to-seed accuracy std "
                "is at most that of BLANP without the critic on at least 2 of 3 (here: every) "
                "data set / architecture pair."
            ),
            paper_value="stabilises (spec: on 2 of 3 pairs)",
            metric="ema_std_pairs_fraction",
            comparison=">=",
            target=2 / 3,
            tiers=("small", "paper"),
            no_control=(
                "The statistic already compares BLANP with its ablation without the EMA "
                "critic, the arm in which the critic's effect is absent; with equal spreads "
                "each pair passes with probability about 1/2 (the experiment docstring "
                "states this chance rate)."
            ),
        ),
        Claim(
            id="antithetic_cancels_even_orders",
            statement=(
                "The antithetic difference cancels the even-order bias: on a trained layer its "
                "per-probe directional error is below the forward difference's (median ratio)."
            ),
            paper_value="first-order accurate from two passes",
            metric="directional_error_ratio",
            comparison="<",
            target=1.0,
            tiers=("smoke", "small", "paper"),
            kind="check",
        ),
        Claim(
            id="blanp_memory_flat",
            statement="BLANP's peak saved-activation bytes per step do not grow from depth 2 to 8.",
            paper_value="does not grow with depth (spec: ratio <= 1.2)",
            metric="mem_ratio_blanp",
            comparison="<=",
            target=1.2,
            control="mem_ratio_backprop_8_2",
        ),
        Claim(
            id="exact_memory_flat",
            statement=(
                "BLANP-Exact's peak saved-activation bytes per step do not grow from depth 2 to 8."
            ),
            paper_value="does not grow with depth (spec: ratio <= 1.2)",
            metric="mem_ratio_exact",
            comparison="<=",
            target=1.2,
            control="mem_ratio_backprop_8_2",
        ),
        Claim(
            id="backprop_memory_grows",
            statement=(
                "Backprop keeps every layer's activations: its peak saved bytes grow with depth "
                "(depth 16 vs 2, MNIST input)."
            ),
            paper_value="grows with depth (spec: ratio >= 3)",
            metric="mem_ratio_backprop",
            comparison=">=",
            target=3.0,
            tiers=("small", "paper"),
            kind="check",
        ),
        Claim(
            id="central_difference_exact_on_quadratic",
            statement="On a quadratic the central difference equals the directional derivative.",
            paper_value="oracle",
            metric="check_antithetic_quadratic_error",
            comparison="<=",
            target=1e-8,
            kind="check",
        ),
        Claim(
            id="no_cross_layer_gradient",
            statement="A layer's local step leaves every other layer's gradient exactly zero.",
            paper_value="construction",
            metric="check_cross_layer_grad_max",
            comparison="<=",
            target=0.0,
            kind="check",
        ),
        Claim(
            id="exact_update_is_local_autograd",
            statement="BLANP-Exact's update equals autograd of the local loss on a detached input.",
            paper_value="oracle",
            metric="check_exact_grad_error",
            comparison="<=",
            target=1e-6,
            kind="check",
        ),
        Claim(
            id="ema_formula",
            statement="The critic update equals tau * critic + (1 - tau) * head.",
            paper_value="oracle",
            metric="check_ema_error",
            comparison="<=",
            target=1e-7,
            kind="check",
        ),
    ),
    deviations=(
        "Data: stratified 10k/2k subsets of real MNIST and Fashion-MNIST at the small tier "
        "(sklearn digits at the smoke tier); CIFAR-10 is not available offline, so the CIFAR "
        "claims are tested on a Fashion-MNIST CNN.",
        "Training length: every network trains until its held-out loss stops improving "
        "(by more than 1% over 5 evaluations 200 steps apart) or a step cap is reached, "
        "instead of the paper's epochs; the notes name the runs the cap ended.",
        "The prior local method is a DGL-style greedy local learner (exact local gradient "
        "through the current head), our stand-in for the paper's best prior method.",
        "Inferred: sigma relative to the pre-activation's batch std, tau = 0.99, Adam, a "
        "smaller learning rate for the perturbation rules, global-pool + linear conv heads, "
        "inference from the last head.",
        "Memory: backprop's growth is compared at depth 16 vs 2 (the MNIST input dominates "
        "at depth 2); the local rules at 8 vs 2 as the spec says.",
    ),
    tiers=(
        ("smoke", "digits MLP 2 x 32, 50 steps, 2 seeds, all methods; digits CNN; depths 2-8"),
        ("small", "MNIST and Fashion-MNIST 10k train / 1k held-out / 2k test, MLP 3 x 256 "
                  "trained to a held-out plateau (cap 8,000 steps), 3 seeds, backprop, BLANP, "
                  "BLANP-Exact and BLANP without the critic; Fashion-MNIST CNN (16, 32, 32) "
                  "on 14x14 for backprop, BLANP-Exact, DGL (cap 6,000 steps); memory at "
                  "depths 2-16; trained networks are cached"),
        ("paper", "full MNIST and Fashion-MNIST, to a plateau (cap 20k steps), 5 seeds, every "
                  "method on a (64, 128, 256) CNN on 28x28; run with --device cuda; not run "
                  "here"),
    ),
    paper_hours=6.0,
    resources=Resources(cpus=1, memory_gb=2.0, gpu=1),
)
