"""Shared fixtures: a temporary store, a toy paper, no network, a fixed hypothesis profile."""

from __future__ import annotations

import ipaddress
import os
import socket
import tempfile

# Under pytest-xdist every worker runs one thread (BLAS, OpenMP, torch): with two workers on
# two cores, each worker's default pool of two OpenMP threads spins against the other
# worker's and the suite runs several times slower. Set before numpy or torch is loaded
# (xdist sets the worker count before it imports this file); an explicit setting is kept.
# The session fixture `_one_thread_per_worker` below covers libraries loaded earlier; the
# imports below come after this setting on purpose (E402).
XDIST_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if XDIST_WORKERS > 1:
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

from neurips26.records import RunRecord  # noqa: E402
from neurips26.registry import Claim, Paper, evaluate_claim  # noqa: E402
from neurips26.store import Store  # noqa: E402

# No test may depend on a cached trained model: every session starts with an empty cache.
os.environ["NEURIPS26_CACHE"] = tempfile.mkdtemp(prefix="neurips26-test-cache-")

TOY = Paper(
    slug="toy",
    title="A <toy> & its claims",
    seed="seed.txt",
    paragraph=1,
    field="testing",
    grade="A",
    summary="Checks the machinery; <script>alert(1)</script> must be escaped.",
    claims=(
        Claim("small_mean", "The mean is small", "0", "mean", "<=", 0.5),
        Claim("many", "Enough samples", "10", "n", ">=", 10, uncertainty="n_ci"),
        Claim("paper_only", "Only at scale", "x", "big", ">=", 1, tiers=("paper",)),
        Claim("oracle", "Matches a closed form", "exact", "err", "<=", 1e-9, kind="check"),
    ),
    deviations=("None | really",),
    tiers=(("smoke", "tiny"), ("small", "default"), ("paper", "large")),
)


def make_record(metrics: dict, *, tier: str = "small", status: str = "ok", **kw) -> RunRecord:
    return RunRecord(
        slug=kw.pop("slug", "toy"),
        tier=tier,
        seed=kw.pop("seed", 0),
        config={"seed": 0, "n": 3},
        status=status,
        metrics=metrics,
        volatile=kw.pop("volatile", ()),
        claims=tuple(evaluate_claim(c, metrics, tier) for c in TOY.claims),
        code_version=kw.pop("code_version", "abc"),
        **kw,
    )


@pytest.fixture
def store(tmp_path) -> Store:
    return Store(tmp_path / "runs" / "test.sqlite")


# ---------------------------------------------------------------------- hypothesis profile
# CI runs every property test on a fixed sequence of examples (derandomize), so a test passes
# or fails the same way on every machine; nothing is written to .hypothesis/. Set
# HYPOTHESIS_PROFILE=dev to explore with random examples.
settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    max_examples=30,
    deadline=None,  # hangs are caught by tests/_fuzz.py's per-call alarm, not by timing
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile("dev", max_examples=200, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# ------------------------------------------------------------------------------ no network
class NetworkBlockedError(OSError):
    """A test tried to open a connection to a host other than this machine."""


def _is_local(address) -> bool:
    if not isinstance(address, tuple) or not address:
        return True  # AF_UNIX paths and the like
    host = address[0]
    if isinstance(host, bytes):
        host = host.decode()
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False  # a host name other than localhost


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _guarded_connect(self, address):
    if not _is_local(address):
        raise NetworkBlockedError(f"tests may not reach the network (connect to {address!r})")
    return _real_connect(self, address)


def _guarded_connect_ex(self, address):
    if not _is_local(address):
        raise NetworkBlockedError(f"tests may not reach the network (connect to {address!r})")
    return _real_connect_ex(self, address)


@pytest.fixture(autouse=True, scope="session")
def _no_network():
    """Make every socket connection to anything but localhost fail, for the whole suite."""
    mp = pytest.MonkeyPatch()
    mp.setattr(socket.socket, "connect", _guarded_connect)
    mp.setattr(socket.socket, "connect_ex", _guarded_connect_ex)
    yield
    mp.undo()


# ------------------------------------------------------------------------ one-thread modules
@pytest.fixture(autouse=True, scope="session")
def _one_thread_per_worker():
    """Every test of an xdist worker runs with one BLAS and torch thread (see the top of
    this file); a single-process run (``TEST_JOBS=0``) keeps the default pools."""
    if XDIST_WORKERS <= 1 or os.environ.get("OMP_NUM_THREADS") != "1":
        yield
        return
    import torch  # noqa: F401  (imported first, so limit_threads sets torch's pool too)

    from neurips26.common.threads import limit_threads

    with limit_threads(1):
        yield


@pytest.fixture(autouse=True, scope="module")
def _one_thread_module(request):
    """A test module that sets ``ONE_THREAD = True`` runs single-threaded, as the runner
    runs a paper with ``Resources(cpus=1)``: for tiny models torch's intra-op pool only
    adds synchronisation to every operation (many times slower on a shared machine)."""
    if not getattr(request.module, "ONE_THREAD", False):
        yield
        return
    import torch  # noqa: F401  (imported first, so limit_threads sets torch's pool too)

    from neurips26.common.threads import limit_threads

    with limit_threads(1):
        yield
