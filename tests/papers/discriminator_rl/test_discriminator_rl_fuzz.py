"""Bad-input property tests for discriminator_rl (issue 10; see tests/_fuzz.py).

Each public call gets NaN, inf, empty, wrong-shape, wrong-dtype, negative and huge values,
one argument at a time: it must refuse them with a ValueError/TypeError naming the
argument, or return a result without new NaN/inf, and never hang.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from _fuzz import BAD_ARRAYS, BAD_SCALARS, Call, fuzz_tests, with_array_tensors
from neurips26.common.models import MLPClassifier
from neurips26.papers.discriminator_rl import (
    ClassifierFeatures,
    Discriminator,
    DiscriminatorGuidedRL,
    EfficientNetFeatures,
    GaussianMixture,
    VelocityMLP,
    conditional_path,
    discriminator_rl,
    drl_round,
    eight_gaussians,
    exact_log_likelihood,
    flow_matching_loss,
    frechet_distance,
    integrate,
    precision_recall,
    sample,
    tilt_weights,
    train_discriminator,
    train_flow_matching,
    two_moons,
)

A, S = BAD_ARRAYS, BAD_SCALARS
torch.manual_seed(0)
NET = VelocityMLP(dim=2, hidden=8, depth=1)
CNET = VelocityMLP(dim=4, hidden=8, depth=1, num_classes=3)
RNG = np.random.default_rng(0)
DATA = RNG.normal(size=(32, 2))
FEATS = RNG.normal(size=(40, 3))
X0 = torch.randn(6, 2)
X1 = torch.randn(6, 2)
T = torch.rand(6)
DISC = Discriminator(3, hidden=4)
CLF = MLPClassifier(4, (3,), 2)
PHI = ClassifierFeatures(CLF, (1, 2, 2))
NAN_REWARD = (lambda x: np.full(len(x), np.nan),)
BAD_MODEL = (None, "abc", 3, object())
BAD_DATA = (*A, np.zeros((8, 3)), np.full((8, 2), 1e300))
BAD_CALLABLE = ("abc", 3, lambda x: np.full((len(x), 3), np.nan), lambda x: np.zeros((1, 1)))
BAD_ALGO = ("ppo", None, 3)


class _Eff(nn.Module):
    def extract_features(self, x):
        return x.mean(1, keepdim=True).expand(-1, 1280, -1, -1)[:, :, :2, :2]


def _eff_call(x, size=8):
    return EfficientNetFeatures(_Eff(), (1, 2, 2), size=size)(x)


def _phi_call(x, batch_size=16):
    return ClassifierFeatures(CLF, (1, 2, 2), batch_size=batch_size)(x)


def _disc_logit(feats):
    return DISC.logit(feats)


def _mix_sample(num_samples, rng=RNG):
    return eight_gaussians().sample(num_samples, rng)


def _mix_log_prob(x):
    return eight_gaussians().log_prob(x)


def _fit(data, beta=1.0, num_samples=16, clip=20.0, algorithm="reward_weighted"):
    est = DiscriminatorGuidedRL(beta=beta, num_rounds=1, num_samples=num_samples,
                                steps_per_round=1, clip=clip, algorithm=algorithm)
    return est.fit(NET, data, disc_kw={"max_iter": 5}).history_


ROUND = {"model": NET, "data": DATA, "num_samples": 16, "steps_per_round": 1, "num_steps": 2,
         "disc_kw": {"max_iter": 5}}  # fmt: skip

CALLS = [
    Call(VelocityMLP, {"dim": 2, "hidden": 4}, {"dim": S, "hidden": S, "depth": S,
                                                "time_dim": S, "num_classes": S[1:]}),
    Call(conditional_path, {"x0": X0, "x1": X1, "t": T},
         {"x0": (*A, torch.full((6, 2), float("nan"))), "x1": A, "t": A}),
    Call(flow_matching_loss, {"model": NET, "x0": X0, "x1": X1, "t": T},
         {"model": BAD_MODEL, "x0": A, "x1": A, "t": A, "sample_weight": A}),
    Call(train_flow_matching, {"model": NET, "data": DATA, "max_iter": 1, "batch_size": 8},
         {"model": BAD_MODEL, "data": BAD_DATA, "max_iter": S, "lr": S, "batch_size": S,
          "seed": S, "noise": A, "sample_weight": A, "y": (np.zeros(32, int), "abc")}),
    Call(sample, {"model": NET, "num_samples": 4, "num_steps": 2},
         {"model": BAD_MODEL, "num_samples": S, "num_steps": S, "seed": S,
          "method": ("rk9", None), "batch_size": S, "y": (np.zeros(4, int), A[3])}),
    Call(sample, {"model": CNET, "num_samples": 3, "num_steps": 2, "y": np.arange(3)},
         {"y": (None, np.array([0, 1, 5]), np.array([-1, 0, 0]), np.zeros(2, int), "abc")}),
    Call(integrate, {"model": NET, "x0": X0, "num_steps": 2},
         {"model": BAD_MODEL, "x0": A, "num_steps": S, "method": ("rk9", None)}),
    Call(exact_log_likelihood, {"model": NET, "x": DATA[:4], "num_steps": 2},
         {"model": BAD_MODEL, "x": BAD_DATA, "num_steps": S}),
    Call(Discriminator, {"num_features": 3}, {"num_features": S, "hidden": S,
                                              "max_logit": S, "mean": A, "scale": A}),
    Call(_disc_logit, {"feats": FEATS}, {"feats": (*A, np.zeros((4, 5)))}),
    Call(train_discriminator, {"feats_data": FEATS, "feats_model": FEATS + 1, "max_iter": 5},
         {"feats_data": A, "feats_model": (*A, np.zeros((4, 5))), "hidden": S,
          "weight_decay": S, "max_iter": S, "lr": S, "batch_size": S, "val_fraction": S,
          "patience": S, "eval_every": S, "max_logit": S, "strict": (None, "abc", 1),
          "seed": S}),
    Call(frechet_distance, {"feats_a": FEATS, "feats_b": FEATS + 1},
         {"feats_a": A, "feats_b": (*A, np.zeros((4, 5)))}),
    Call(precision_recall, {"feats_real": FEATS, "feats_fake": FEATS + 1},
         {"feats_real": A, "feats_fake": (*A, np.zeros((4, 5))), "k": S}),
    Call(tilt_weights, {"rewards": np.arange(5.0)},
         {"rewards": A[:7], "beta": S, "clip": (*S, 0.5)}),
    Call(drl_round, ROUND,
         {"model": BAD_MODEL, "data": BAD_DATA, "phi": BAD_CALLABLE, "beta": S,
          "num_samples": (*S, 1), "steps_per_round": S, "clip": S, "anchor": S, "lr": S,
          "batch_size": S, "num_steps": S, "algorithm": BAD_ALGO, "sigma": S,
          "coupling": ("both", None), "disc_kw": ("abc", 3), "reward_fn": (*NAN_REWARD, 3),
          "seed": S, "y": (np.zeros(32, int), "abc")}),
    Call(drl_round, {**ROUND, "algorithm": "policy_gradient"},
         {"reward_fn": NAN_REWARD, "beta": S}),
    Call(discriminator_rl, {**ROUND, "num_rounds": 1},
         {"num_rounds": S, "seed": S, "phi": BAD_CALLABLE, "data": BAD_DATA}),
    Call(_fit, {"data": DATA},
         {"data": BAD_DATA, "beta": S, "num_samples": (*S, 1), "clip": S,
          "algorithm": BAD_ALGO}),
    Call(ClassifierFeatures, {"net": CLF, "image_shape": (1, 2, 2)},
         {"net": BAD_MODEL, "image_shape": (None, (1, 2), (0, 2, 2), "abc"),
          "batch_size": S}),
    Call(_phi_call, {"x": RNG.uniform(-1, 1, (5, 4))},
         {"x": (*A, np.zeros((5, 3))), "batch_size": S}),
    Call(_eff_call, {"x": RNG.uniform(-1, 1, (5, 4))},
         {"x": (*A, np.zeros((5, 3))), "size": S}),
    Call(GaussianMixture, {"means": np.zeros((2, 2)), "std": 1.0},
         {"means": A, "std": S}),
    Call(_mix_sample, {"num_samples": 5}, {"num_samples": S, "rng": (None, 0, "abc")}),
    Call(_mix_log_prob, {"x": DATA}, {"x": (*A, np.zeros((3, 3)))}),
    Call(eight_gaussians, {}, {"radius": S, "std": S}),
    Call(two_moons, {"num_samples": 5, "rng": RNG},
         {"num_samples": S, "noise": S, "rng": (None, 0, "abc")}),
]
# Float numpy arguments also get tensors holding NaN and tensors requiring grad.
CALLS = with_array_tensors(CALLS)

KNOWN_GAPS: frozenset = frozenset()

test_bad_arguments_are_refused, test_known_gaps = fuzz_tests(CALLS, KNOWN_GAPS, deadline=None)
