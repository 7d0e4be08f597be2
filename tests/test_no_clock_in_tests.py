"""No test asserts on wall-clock time: timing belongs in benchmarks/.

A test that reads a clock may use it to bound a wait (a hang guard such as
``while ... and time.monotonic() < deadline``), never in an ``assert``: on a loaded
machine a timed assertion fails for reasons that have nothing to do with the code. This
walks every test's syntax tree, marks the names assigned from a clock (and from
arithmetic on such names), and fails on an assert that reads one, calls a clock, or reads
a run's ``wall_seconds`` / ``cpu_seconds``.
"""

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CLOCKS = {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "process_time",
          "process_time_ns", "time", "time_ns", "thread_time"}
TIMED_ATTRS = {"wall_seconds", "cpu_seconds", "elapsed"}


#: Event-loop clocks: ``anyio.current_time()``, ``trio.current_time()``.
LOOP_CLOCKS = {"current_time"}


def _is_clock_call(node) -> bool:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    if node.func.attr in LOOP_CLOCKS:
        return True
    return (node.func.attr in CLOCKS and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "time")


#: Calls whose result is still a time when their argument is one (other calls, such as
#: ``json.loads(read(p, deadline))``, only use a clock to bound a wait).
ARITHMETIC = {"abs", "min", "max", "float", "round", "int", "sum"}


def _reads(node, tainted) -> bool:
    if _is_clock_call(node):
        return True
    if isinstance(node, ast.Name):
        return node.id in tainted
    if isinstance(node, ast.Attribute) and node.attr in TIMED_ATTRS:
        return True
    if isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in ARITHMETIC:
            return _reads(node.func, tainted)
    return any(_reads(child, tainted) for child in ast.iter_child_nodes(node))


def timed_asserts(source: str) -> list[int]:
    """Line numbers of asserts that read a clock in ``source``."""
    tree = ast.parse(source)
    bad = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        tainted: set[str] = set()
        changed = True
        while changed:  # names assigned from clocks, or from arithmetic on such names
            changed = False
            for node in ast.walk(fn):
                if isinstance(node, ast.Assign) and _reads(node.value, tainted):
                    for t in node.targets:
                        for name in ast.walk(t):
                            if isinstance(name, ast.Name) and name.id not in tainted:
                                tainted.add(name.id)
                                changed = True
        for node in ast.walk(fn):
            if isinstance(node, ast.Assert) and _reads(node.test, tainted):
                bad.append(node.lineno)
    return bad


def test_the_checker_finds_a_timed_assert():
    src = ("import time\n"
           "def test_x():\n"
           "    t0 = time.perf_counter()\n"
           "    f()\n"
           "    dt = time.perf_counter() - t0\n"
           "    assert dt < 1\n"
           "def test_y(record):\n"
           "    assert record.wall_seconds < 60\n"
           "def test_guard():\n"
           "    deadline = time.monotonic() + 5\n"
           "    while time.monotonic() < deadline:\n"
           "        pass\n"
           "    assert done()\n"
           "async def test_loop():\n"
           "    t0 = anyio.current_time()\n"
           "    dt = anyio.current_time() - t0\n"
           "    assert dt < 2.0\n")
    assert timed_asserts(src) == [6, 8, 17]


def test_no_test_asserts_on_a_clock():
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        if path.name == Path(__file__).name:
            continue
        found += [f"{path.relative_to(TESTS)}:{n}" for n in timed_asserts(path.read_text())]
    assert not found, f"asserts on wall-clock time (move them to benchmarks/): {found}"
