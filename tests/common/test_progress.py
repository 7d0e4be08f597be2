"""Phase progress: experiments mark phases, the command line draws them."""

from __future__ import annotations

import io
import sys

import pytest
import torch

from neurips26.common.progress import listen, listening, phase, track
from neurips26.common.train import train


def test_phases_reach_the_listener_and_cost_nothing_without_one():
    events = []
    assert not listening()
    with listen(lambda p: events.append((p.name, p.done, p.total, p.finished))):
        assert listening()
        with phase("fit", 3) as p:
            p.advance()
            p.advance(2)
        assert list(track(iter([1, 2]), "stream")) == [1, 2]  # no len: total unknown
    assert not listening()
    assert events[0] == ("fit", 0, 3, False) and ("fit", 3, 3, True) in events
    assert events[-1] == ("stream", 2, None, True)
    assert list(track(range(3), "x")) == [0, 1, 2]


def test_training_loop_reports_its_steps_as_a_phase():
    model = torch.nn.Linear(2, 1)
    batches = [(torch.zeros(4, 2), torch.zeros(4, 1))] * 5
    seen = []
    with listen(lambda p: seen.append((p.name, p.done, p.total))):
        train(model, iter(batches), max_iter=5, lr=1e-2, seed=0,
              loss_fn=lambda m, b: torch.nn.functional.mse_loss(m(b[0]), b[1]), desc="probe")
    assert seen[0] == ("probe", 0, 5) and seen[-1] == ("probe", 5, 5)


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="name"):
        with phase(""):
            pass
    with pytest.raises(ValueError, match="total"):
        with phase("x", -1):
            pass
    with pytest.raises(TypeError, match="callback"):
        with listen(None):
            pass


def test_run_draws_the_current_phase_on_a_terminal(monkeypatch, tmp_path, capsys):
    from neurips26.cli import main

    class Tty(io.StringIO):
        def isatty(self):
            return True

    err = Tty()
    monkeypatch.setattr(sys, "stderr", err)
    store = str(tmp_path / "s.sqlite")
    assert main(["--store", store, "run", "sfd_edgar", "--tier", "smoke"]) == 0
    assert "sfd_edgar [smoke] · units" in err.getvalue()  # the driver's phase
    err2 = Tty()
    monkeypatch.setattr(sys, "stderr", err2)
    assert main(["--store", store, "run", "sfd_edgar", "--tier", "smoke", "--quiet"]) == 0
    assert "· units" not in err2.getvalue()
