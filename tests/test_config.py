from dataclasses import dataclass

import pytest

from neurips26.common.experiment import (
    ConfigError,
    RunResult,
    apply_overrides,
    config_from_dict,
    config_to_dict,
    parse_set_args,
)


@dataclass(frozen=True)
class Cfg:
    seed: int = 0
    lr: float = 0.1
    name: str = "a"
    flag: bool = False
    sizes: tuple[int, ...] = (1, 2)
    limit: float | None = None


def test_overrides_are_typed():
    cfg = apply_overrides(Cfg(), parse_set_args(["lr=2", "sizes=3,4,5", "flag=true", "name=b"]))
    assert cfg == Cfg(lr=2.0, sizes=(3, 4, 5), flag=True, name="b")
    assert isinstance(cfg.lr, float)
    assert apply_overrides(Cfg(), {"sizes": "[7]", "limit": "1.5"}).sizes == (7,)
    assert apply_overrides(Cfg(limit=1.0), {"limit": "none"}).limit is None
    assert apply_overrides(Cfg(), seed=5).seed == 5


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (["lr=abc"], "lr: expected a number"),
        (["seed=1.5"], "seed: expected an integer"),
        (["flag=2"], "flag: expected true or false"),
        (["sizes=a,b"], "sizes: expected an integer"),
        (["nope=1"], "unknown config key 'nope'; valid keys: seed, lr, name, flag, sizes, limit"),
        (["novalue"], "--set expects key=value"),
    ],
)
def test_bad_overrides_name_the_problem(text, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        apply_overrides(Cfg(), parse_set_args(text))


def test_config_round_trips_through_json():
    cfg = Cfg(lr=0.5, sizes=(4,), limit=2.0)
    assert config_from_dict(Cfg, config_to_dict(cfg)) == cfg


def test_run_result_checks_its_metrics():
    with pytest.raises(TypeError, match="metric 'x'"):
        RunResult(metrics={"x": [1, 2]})
    with pytest.raises(ValueError, match="volatile"):
        RunResult(metrics={"x": 1.0}, volatile=("t",))
    r = RunResult(metrics={"x": 1.0, "t": 2.0}, volatile=("t",))
    assert r.stable_metrics() == {"x": 1.0}


def test_none_is_text_for_a_field_that_cannot_be_none():
    @dataclass(frozen=True)
    class Choice:
        seed: int = 0
        dataset: str = "mnist"
        limit: float | None = 1.0

    assert apply_overrides(Choice(), {"dataset": "none"}).dataset == "none"
    assert apply_overrides(Choice(), {"dataset": "null"}).dataset == "null"
    assert apply_overrides(Choice(), {"limit": "none"}).limit is None
