"""Training and the smoke reproduction."""

import math

import numpy as np

from neurips26.common.data import ByteTokenizer, pydoc_topics_text, train_val_split
from neurips26.common.models import GPTConfig
from neurips26.common.torch import seeded
from neurips26.papers.state_pred_sep import LMTrainResult, SPSTransformer, train_lm
from neurips26.papers.state_pred_sep.experiment import TIERS, run
from neurips26.papers.state_pred_sep.paper import PAPER

CFG = GPTConfig(block_size=16, num_layers=1, num_heads=2, dim=16)


def _data():
    tok = ByteTokenizer()
    return train_val_split(tok.encode(pydoc_topics_text()[:20_000]), 256)


def _train(seed):
    with seeded(seed):
        model = SPSTransformer(CFG)
    return model, train_lm(model, _data(), max_iter=15, batch_size=4, seed=seed, warmup=2,
                           num_evals=3, eval_windows=8)


def test_train_lm_is_deterministic_and_learns():
    m1, r1 = _train(3)
    m2, r2 = _train(3)
    assert r1.eval_nll == r2.eval_nll and r1.train_losses == r2.train_losses
    for (k, a), b in zip(m1.state_dict().items(), m2.state_dict().values(), strict=True):
        assert np.array_equal(a.numpy(), b.numpy()), k
    assert r1.eval_steps == (5, 10, 15) and len(r1.train_losses) == 15
    assert r1.val_nll < math.log(256)
    assert r1.tokens_seen == 15 * 4 * 16
    assert r1.train_flops == r1.tokens_seen * r1.flops_per_token
    _, r3 = _train(4)
    assert r3.train_losses != r1.train_losses


def test_tokens_to_reach_interpolates():
    res = LMTrainResult(eval_steps=(10, 20, 30), eval_nll=(3.0, 2.0, 1.5), train_losses=(),
                        tokens_per_step=2, flops_per_token=1.0)
    assert res.tokens_to_reach(2.0) == 40.0
    assert res.tokens_to_reach(1.75) == 50.0
    assert math.isnan(res.tokens_to_reach(1.0))


def test_smoke_run_metrics_claims_and_cache(tmp_path, monkeypatch):
    # A cache of this test's own: another test (the contract's seed-1 smoke run) may have
    # trained instances of the same seed in the session's cache.
    monkeypatch.setenv("NEURIPS26_CACHE", str(tmp_path / "cache"))
    first = run(TIERS["smoke"])
    m = first.metrics
    for name in ("gap_tokens", "gap_pause", "gap_flops", "local_frac_standard",
                 "cache_max_abs_diff", "flop_count_rel_error", "mask_mismatches"):
        assert name in m, name
    # the controls: the pause model in the separated model's place, the untrained GPT
    for name in ("gap_tokens_pause", "gap_flops_pause", "local_frac_standard_untrained"):
        assert math.isfinite(m[name]), name
    assert 0 < m["local_frac_standard_untrained"] <= 1
    # the other reading of the prediction step's input, the loss claims' diagnostics
    for name in ("gap_tokens_token", "gap_pause_token", "gap_flops_token",
                 "val_nll_separated_token"):
        assert math.isfinite(m[name]), name
    iv = first.intervals["gap_tokens"]
    assert iv["n"] == 2 and iv["lo"] <= m["gap_tokens"] <= iv["hi"]
    assert m["num_runs"] == 2 * 5 and m["num_cached_runs"] == 0  # 4 models + token reading
    assert m["mask_mismatches"] == 0 and m["flop_count_rel_error"] == 0
    assert m["cache_max_abs_diff"] < 1e-5 and m["cache_greedy_match"]
    assert m["readout_grad_norm_separated"] == 0 and m["local_frac_separated"] == 0
    assert 1.0 < m["flop_ratio"] < 2.6  # the head dominates at width 16
    assert {"sizes", "gradients"} <= set(first.tables) and first.figures["curves"][:4] == b"\x89PNG"
    verdicts = {c.id: c.verdict for c in PAPER.evaluate(m, "smoke")}
    assert verdicts["kv_cache"] == "reproduced" and verdicts["downstream"] == "not run"
    again = run(TIERS["smoke"])  # every model now comes from the (test-local) cache
    assert again.metrics["num_cached_runs"] == again.metrics["num_runs"]
    a, b = again.stable_metrics(), first.stable_metrics()
    assert a.keys() == b.keys()
    assert all(a[k] == b[k] or (a[k] != a[k] and b[k] != b[k]) for k in a)  # NaN == NaN


def test_readme_example_runs():
    from pathlib import Path

    import neurips26.papers.state_pred_sep as pkg

    text = (Path(pkg.__file__).parent / "README.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "README.md", "exec"), {})


def test_scaling_sweep_code_path():
    import dataclasses

    cfg = dataclasses.replace(TIERS["smoke"], layers=(1, 1), dims=(16, 32), num_seeds=2,
                              max_iter=6, token_reading=False)
    res = run(cfg)
    assert math.isnan(res.metrics["gap_tokens_token"]) and "token_reading" in \
        res.reasons["gap_tokens_token"]
    assert [r["dim"] for r in res.tables["sizes"]] == [16, 32]
    assert "gap_scale_slope" in res.metrics and math.isfinite(res.metrics["gap_scale_slope"])
    assert res.metrics["gap_tokens_max"] == max(r["gap_tokens"] for r in res.tables["sizes"])
    assert res.figures["scaling"][:4] == b"\x89PNG"
