"""Bad-input property tests for ecfr (issue 10; see tests/_fuzz.py).

Each public call gets NaN, inf, empty, wrong-shape, wrong-dtype, negative and huge values,
one argument at a time: it must refuse them with a ValueError/TypeError naming the
argument, or return a result without new NaN/inf, and never hang.
"""

from __future__ import annotations

import numpy as np
import torch

from _fuzz import BAD_ARRAYS, BAD_SCALARS, Call, fuzz_tests, with_array_tensors
from neurips26.papers.ecfr import (
    AFIR,
    ECFR,
    HAC,
    ECFRDetector,
    RGBDFeatureExtractor,
    aupro,
    check_rgbd,
    fill_depth_holes,
    greedy_coreset,
    image_auroc,
    make_synthetic_3dad,
    pixel_auroc,
    render_object,
    value_noise,
)

A, S = BAD_ARRAYS, BAD_SCALARS
RNG = np.random.default_rng(0)
MAPS = RNG.random((2, 8, 8))
MASKS = np.zeros((2, 8, 8), bool)
MASKS[0, 2:4, 2:4] = True
RGB = RNG.random((4, 16, 16, 3))
DEPTH = np.ones((4, 16, 16))
MISMATCHED = (np.ones((4, 16, 12)), np.ones((3, 16, 16)), np.full((4, 16, 16), np.nan))


def fit_ecfr(rgb=RGB, depth=DEPTH, dim=8, max_iter=2, lr=1e-3, sigma=4.0, batch_size=2,
             num_blocks=1, cross_mode="gated"):  # fmt: skip
    fx = RGBDFeatureExtractor(width=4, max_iter=2)
    det = ECFRDetector(extractor=fx, dim=dim, max_iter=max_iter, lr=lr, sigma=sigma,
                       batch_size=batch_size, num_blocks=num_blocks, cross_mode=cross_mode)
    return det.fit(rgb, depth).score(rgb, depth)


def fit_extractor(rgb=RGB, depth=DEPTH, width=4, max_iter=2, noise=0.1, lr=1e-3):
    fx = RGBDFeatureExtractor(width=width, max_iter=max_iter, noise=noise, lr=lr)
    return fx.fit(rgb, depth).transform(rgb, depth).rgb.numpy()


def ecfr_forward(rgb_channels=5, depth_channels=6, dim=8, num_blocks=1):
    m = ECFR(rgb_channels, depth_channels, dim=dim, num_blocks=num_blocks, num_heads=1)
    return m(torch.zeros(1, 5, 4, 4), torch.zeros(1, 6, 4, 4)).rgb_hat.detach().numpy()


def modules(dim=8, reduction=4, spatial_kernel=7, window_size=4, kernel_size=3, mlp_ratio=2.0):
    AFIR(dim, reduction=reduction, spatial_kernel=spatial_kernel)
    return HAC(dim, window_size=window_size, num_heads=1, kernel_size=kernel_size,
               mlp_ratio=mlp_ratio)  # fmt: skip


CALLS = [
    Call(image_auroc, {"scores": [0.1, 0.5, 0.3], "labels": [0, 1, 1]},
         {"scores": A, "labels": A}),
    Call(pixel_auroc, {"maps": MAPS, "masks": MASKS}, {"maps": A, "masks": A}),
    Call(aupro, {"maps": MAPS, "masks": MASKS, "fpr_limit": 0.3},
         {"maps": A, "masks": A, "fpr_limit": S}),
    Call(fill_depth_holes, {"depth": np.array([[1.0, np.nan], [2.0, 3.0]])},
         {"depth": A, "max_fraction": S}),
    Call(check_rgbd, {"rgb": RGB, "depth": DEPTH}, {"rgb": A, "depth": A + MISMATCHED}),
    Call(make_synthetic_3dad, {"num_classes": 1, "num_train_per_class": 1,
                               "num_test_per_class": 2, "image_size": 16},
         {"num_classes": S, "num_train_per_class": S, "num_test_per_class": S,
          "image_size": S, "seed": S, "anomaly_types": ((), "dent", ("x",), None)}),
    Call(render_object, {"class_name": "bagel", "image_size": 16},
         {"class_name": ("x", None, 3), "anomaly": ("x", 3), "image_size": S, "seed": S}),
    Call(value_noise, {"size": 8, "rng": np.random.default_rng(0)},
         {"size": S, "rng": (None, 3, "abc"), "octaves": S, "base": S}),
    Call(greedy_coreset, {"x": RNG.random((10, 3)), "num": 3},
         {"x": A, "num": S, "seed": S}),
    Call(fit_ecfr, {}, {"rgb": A, "depth": A + MISMATCHED, "dim": S, "max_iter": S, "lr": S,
                        "sigma": (-1.0, float("nan"), "abc"), "batch_size": S,
                        "num_blocks": S, "cross_mode": ("x", None)}),
    Call(fit_extractor, {}, {"rgb": A, "depth": A + MISMATCHED, "width": S, "max_iter": S,
                             "noise": S[:5], "lr": S}),
    Call(ecfr_forward, {}, {"rgb_channels": S, "depth_channels": S, "dim": S,
                            "num_blocks": S}),
    Call(modules, {}, {"dim": S, "reduction": S, "spatial_kernel": S, "window_size": S,
                       "kernel_size": S, "mlp_ratio": S}),
]  # fmt: skip
# Float numpy arguments also get tensors holding NaN and tensors requiring grad.
CALLS = with_array_tensors(CALLS)

# Bad inputs not yet refused with a message naming the argument (issue 10); each is an
# xfail(strict) below, so fixing one makes the test say to remove it from this list.
KNOWN_GAPS: frozenset = frozenset()


test_bad_arguments_are_refused, test_known_gaps = fuzz_tests(CALLS, KNOWN_GAPS, deadline=None)

