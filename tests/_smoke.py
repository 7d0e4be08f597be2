"""A paper's smoke run as a module-scoped fixture, with the model cache switched off."""

from __future__ import annotations

import pytest


def smoke_fixture(run, config):
    """``smoke = smoke_fixture(run, TIERS["smoke"])``: the fixture runs ``run(config)`` once
    per test module with ``NEURIPS26_NO_CACHE=1`` (no test may need the trained-model cache)."""

    @pytest.fixture(scope="module")
    def smoke():
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("NEURIPS26_NO_CACHE", "1")
            yield run(config)

    return smoke
