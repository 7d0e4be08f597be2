"""Oracles for the WSD schedule and its features (direct loops, closed forms)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neurips26.papers.adis_law import (
    InjectionPolicy,
    Schedule,
    min_total_steps,
    schedule_features,
    wsd_schedule,
)


def _loop_features(lrs, mix, zeta):
    """S1, S2, E_d, E_g by the definitions, one step at a time."""
    s = len(lrs)
    warm_end = 0
    while warm_end + 1 < s and lrs[warm_end + 1] > lrs[warm_end]:
        warm_end += 1
    s1 = s2 = ed = eg = m = 0.0
    started = False
    out = []
    for i in range(s):
        s1 += lrs[i]
        drop = lrs[i - 1] - lrs[i] if i > warm_end else 0.0
        m = zeta * m + drop
        s2 += m
        ed += mix[i] * lrs[i]
        started = started or mix[i] > 0
        if started:
            eg += (1 - mix[i]) * lrs[i]
        out.append((s1, s2, ed, eg))
    return np.array(out).T


def test_boundaries_at_documented_steps():
    s, eta0 = 1000, 2e-3
    pol = InjectionPolicy(fraction=0.5, mix_ratio=0.3, peak_lr=1.2e-3)
    sch = wsd_schedule(s, peak_lr=eta0, policy=pol)
    assert isinstance(sch, Schedule) and sch.total_steps == s
    w, s_a = 20, 800  # round(0.02 S), S - round(0.2 S)
    s_inj, s_rw = 900, 920  # S - round(0.5 * 200), s_inj + round(0.02 S)
    assert (sch.warmup_end, sch.anneal_start, sch.injection_start, sch.rewarm_end) == (
        w, s_a, s_inj, s_rw)
    lrs = sch.lrs
    np.testing.assert_allclose(lrs[:w], eta0 * np.arange(1, w + 1) / w)
    np.testing.assert_allclose(lrs[w:s_a], eta0)
    eta_min = 0.1 * eta0
    base = wsd_schedule(s, peak_lr=eta0)
    np.testing.assert_array_equal(lrs[:s_inj], base.lrs[:s_inj])
    np.testing.assert_allclose(base.lrs[s_a:], eta0 - (eta0 - eta_min) * np.arange(1, 201) / 200)
    assert lrs[s_rw - 1] == pytest.approx(pol.peak_lr)  # re-warmup reached at s_rw - 1
    assert np.all(np.diff(lrs[s_inj - 1:s_rw]) < 0) or np.all(np.diff(lrs[s_inj - 1:s_rw]) > 0)
    assert lrs[-1] == pytest.approx(eta_min)
    np.testing.assert_allclose(np.diff(lrs[s_rw:]), -(pol.peak_lr - eta_min) / (s - s_rw))
    # the mix is exactly r inside the window and exactly 0 outside
    assert np.all(sch.mix[s_inj:] == 0.3) and np.all(sch.mix[:s_inj] == 0.0)
    assert np.all(base.mix == 0.0)


@settings(max_examples=25, deadline=None)
@given(fraction=st.sampled_from([0.25, 0.5, 0.75, 1.0]), r=st.floats(0, 1),
       eta=st.floats(1e-4, 3e-3), s=st.integers(200, 1500))
def test_features_match_direct_loop(fraction, r, eta, s):
    sch = wsd_schedule(s, peak_lr=1e-3, policy=InjectionPolicy(fraction, r, eta))
    f = schedule_features(sch, zeta=0.99)
    s1, s2, ed, eg = _loop_features(sch.lrs, sch.mix, 0.99)
    np.testing.assert_allclose(f.s1, s1, rtol=1e-12)
    np.testing.assert_allclose(f.s2, s2, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(f.e_domain, ed, rtol=1e-12, atol=1e-18)
    np.testing.assert_allclose(f.e_general, eg, rtol=1e-12, atol=1e-18)
    np.testing.assert_allclose(f.general_exposure, s1 - ed, rtol=1e-12)
    assert f.injection_start == (sch.injection_start if r > 0 else s)


def test_s2_closed_forms():
    assert np.all(schedule_features(np.full(50, 3e-4)).s2 == 0.0)  # constant LR
    zeta, delta = 0.999, 0.4
    lrs = np.r_[np.full(10, 1.0), np.full(300, 1.0 - delta)]  # an instant drop at step 10
    f = schedule_features(lrs, zeta=zeta)
    k = np.arange(1, 301)
    np.testing.assert_allclose(f.s2[10:], delta * (1 - zeta**k) / (1 - zeta), rtol=1e-12)
    assert np.all(f.s2[:10] == 0)
    # a re-warmup (an LR rise after the initial warmup) shrinks S2
    up = np.r_[np.linspace(0.1, 1, 5), np.full(5, 1.0), np.full(5, 0.5), np.full(5, 0.9)]
    s2 = schedule_features(up, zeta=0.9).s2
    assert s2[15] < s2[14]


def test_warmup_adds_nothing_to_s2():
    sch = wsd_schedule(500, peak_lr=1e-3)
    f = schedule_features(sch)
    assert np.all(f.s2[: sch.anneal_start] == 0.0)
    assert np.all(np.diff(f.s2[sch.anneal_start:]) > 0)


def test_min_total_steps_is_tight():
    for kw in ({}, {"fraction": 0.25}, {"fraction": 1.0, "rewarm_frac": 0.05}):
        n = min_total_steps(**kw)
        pol = None if "fraction" not in kw else InjectionPolicy(kw["fraction"], 0.2, 1e-3)
        rw = kw.get("rewarm_frac", 0.02)
        wsd_schedule(n, peak_lr=1e-3, policy=pol, rewarm_frac=rw)
        with pytest.raises(ValueError, match=f"the minimum is {n}"):
            wsd_schedule(n - 1, peak_lr=1e-3, policy=pol, rewarm_frac=rw)
