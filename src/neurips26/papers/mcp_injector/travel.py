"""A toy "travel desk" MCP server (7 deterministic tools) and its task set.

Used by the reproduction and the tests as the real MCP server behind the injector. Run it
over stdio with ``python -m neurips26.papers.mcp_injector.travel_server`` (add ``--extra`` for the
test tools ``echo``, which has an output schema, ``echo_text``, which has none, and
``slow``, which sleeps and reports whether it was cancelled).

Every tool is a total, deterministic function of its arguments (unknown inputs still get
an answer, derived from a CRC of the input), returning a JSON object as text.
"""

from __future__ import annotations

import json
import sys
import zlib
from dataclasses import dataclass

import numpy as np

from neurips26.common.validation import check_seed

__all__ = [
    "TRAVEL_TOOLS",
    "Step",
    "Task",
    "build_travel_server",
    "make_tasks",
    "stdio_server_command",
    "tool_answer",
]

_CITIES = {
    "Paris": "CDG",
    "London": "LHR",
    "Tokyo": "HND",
    "New York": "JFK",
    "Sydney": "SYD",
    "Cairo": "CAI",
    "Lima": "LIM",
    "Toronto": "YYZ",
    "Berlin": "BER",
    "Nairobi": "NBO",
    "Delhi": "DEL",
    "Madrid": "MAD",
}
_RATES = {"USD": 1.0, "EUR": 0.92, "GBP": 0.79, "JPY": 151.0, "INR": 83.0}
_FORECASTS = ("sunny", "cloudy", "rain", "windy", "snow")

TRAVEL_TOOLS = (
    "lookup_airport",
    "search_flights",
    "get_fare",
    "convert_currency",
    "check_visa",
    "get_weather",
    "book",
)


def _h(*parts: object) -> int:
    return zlib.crc32("|".join(str(p) for p in parts).encode("utf-8"))


def tool_answer(tool: str, args: dict) -> dict:
    """The ground-truth output of a travel tool (what the server returns), as a dict."""
    if tool == "lookup_airport":
        city = str(args["city"])
        return {"city": city, "code": _CITIES.get(city, f"X{_h(city) % 100:02d}")}
    if tool == "search_flights":
        o, d, date = str(args["origin"]), str(args["destination"]), str(args["date"])
        return {"flight": f"{o[:3]}{d[:3]}{_h(o, d, date) % 900 + 100}", "seats": _h(d) % 9 + 1}
    if tool == "get_fare":
        fl = str(args["flight"])
        return {"flight": fl, "fare_usd": float(200 + _h(fl) % 1300)}
    if tool == "convert_currency":
        amount, cur = float(args["amount"]), str(args["currency"])
        rate = _RATES.get(cur, 1.0 + (_h(cur) % 50) / 10)
        return {"amount": round(amount * rate, 2), "currency": cur}
    if tool == "check_visa":
        cit, dest = str(args["citizenship"]), str(args["destination"])
        return {"destination": dest, "visa_required": bool(_h(cit, dest) % 3 == 0)}
    if tool == "get_weather":
        city, date = str(args["city"]), str(args["date"])
        return {"city": city, "forecast": _FORECASTS[_h(city, date) % 5], "temp_c": _h(date) % 35}
    if tool == "book":
        fl, who = str(args["flight"]), str(args["passenger"])
        return {"confirmation": f"CONF-{_h(fl, who) % 10**6:06d}"}
    raise KeyError(f"unknown travel tool {tool!r}")


def build_travel_server(*, middleware=None, extra_tools: bool = False, name: str = "travel-desk"):
    """An ``mcp.server.MCPServer`` serving the seven travel tools.

    Parameters
    ----------
    middleware : list or None
        ``ServerMiddleware`` instances (e.g. ``[injector.middleware()]``).
    extra_tools : bool
        Also serve the test tools ``echo`` (structured output), ``echo_text`` (text only)
        and ``slow(seconds)``.
    """
    import anyio
    from mcp.server import MCPServer

    srv = MCPServer(name, middleware=list(middleware or []), log_level="WARNING")

    def reply(tool: str, **kw) -> str:
        return json.dumps(tool_answer(tool, kw), sort_keys=True)

    @srv.tool(structured_output=False)
    async def lookup_airport(city: str) -> str:
        """IATA code of a city's main airport."""
        return reply("lookup_airport", city=city)

    @srv.tool(structured_output=False)
    async def search_flights(origin: str, destination: str, date: str) -> str:
        """Cheapest flight between two airport codes on a date."""
        return reply("search_flights", origin=origin, destination=destination, date=date)

    @srv.tool(structured_output=False)
    async def get_fare(flight: str) -> str:
        """Fare of a flight in USD."""
        return reply("get_fare", flight=flight)

    @srv.tool(structured_output=False)
    async def convert_currency(amount: float, currency: str) -> str:
        """Convert a USD amount to another currency."""
        return reply("convert_currency", amount=amount, currency=currency)

    @srv.tool(structured_output=False)
    async def check_visa(citizenship: str, destination: str) -> str:
        """Whether a visa is needed to enter a destination airport's country."""
        return reply("check_visa", citizenship=citizenship, destination=destination)

    @srv.tool(structured_output=False)
    async def get_weather(city: str, date: str) -> str:
        """Forecast for a city on a date."""
        return reply("get_weather", city=city, date=date)

    @srv.tool(structured_output=False)
    async def book(flight: str, passenger: str) -> str:
        """Book a seat; returns a confirmation code."""
        return reply("book", flight=flight, passenger=passenger)

    if extra_tools:
        state = {"slow_cancelled": 0, "slow_finished": 0}
        srv.test_state = state  # type: ignore[attr-defined]

        @srv.tool()
        async def echo(text: str) -> str:
            """Echo (structured output {"result": str})."""
            return text

        @srv.tool(structured_output=False)
        async def echo_text(text: str) -> str:
            """Echo (text only, no output schema)."""
            return text

        @srv.tool(structured_output=False)
        async def slow(seconds: float) -> str:
            """Sleep, counting cancellations; returns the counters."""
            try:
                await anyio.sleep(seconds)
            except anyio.get_cancelled_exc_class():
                state["slow_cancelled"] += 1
                raise
            state["slow_finished"] += 1
            return json.dumps(state, sort_keys=True)

    return srv


def stdio_server_command(*, extra_tools: bool = False) -> list[str]:
    """The argv that runs the travel server over stdio with this interpreter.

    Parameters
    ----------
    extra_tools : bool
        Also serve the ``echo`` / ``echo_text`` test tools.

    Returns
    -------
    list of str
        ``[sys.executable, "-m", ...]``, ready for ``StdioServerParameters`` or the proxy.
    """
    cmd = [sys.executable, "-m", "neurips26.papers.mcp_injector.travel_server"]
    return cmd + (["--extra"] if extra_tools else [])


# ---------------------------------------------------------------------------------------
# tasks


@dataclass(frozen=True)
class Step:
    """One subgoal: call ``tool`` with ``args``; ``refs`` maps an argument to ``(step, field)``."""

    tool: str
    args: tuple[tuple[str, object], ...]
    refs: tuple[tuple[str, int, str], ...] = ()

    @property
    def deps(self) -> tuple[int, ...]:
        return tuple(sorted({j for _, j, _ in self.refs}))


@dataclass(frozen=True)
class Task:
    """A dependency chain of 3-7 tool calls and its ground-truth outputs."""

    id: int
    steps: tuple[Step, ...]
    truth: tuple[str, ...]  # JSON text of each step's correct output


def _resolve(step: Step, outputs: list) -> dict:
    args = dict(step.args)
    for name, j, fld in step.refs:
        out = outputs[j]
        args[name] = out.get(fld, "?") if isinstance(out, dict) else "?"
    return args


#: Most tasks :func:`make_tasks` builds.
MAX_TASKS = 100_000


def make_tasks(num_tasks: int = 25, *, seed: int = 0) -> list[Task]:
    """``num_tasks`` travel tasks with chains of 3 to 7 calls (lengths cycle 3..7).

    Step order: airport(origin), airport(destination), flights, then a length-dependent
    tail drawn from fare -> currency, visa, weather, booking.
    """
    if isinstance(num_tasks, bool) or not isinstance(num_tasks, int) or num_tasks < 1:
        raise ValueError(f"num_tasks must be a positive int, got {num_tasks!r}")
    if num_tasks > MAX_TASKS:
        raise ValueError(f"num_tasks = {num_tasks} is more than the limit of {MAX_TASKS}")
    seed = check_seed(seed, "seed")
    rng = np.random.default_rng([seed, 7])
    cities = list(_CITIES)
    tasks = []
    for i in range(num_tasks):
        o, d = rng.choice(len(cities), size=2, replace=False)
        origin, dest = cities[int(o)], cities[int(d)]
        date = f"2026-{int(rng.integers(1, 13)):02d}-{int(rng.integers(1, 29)):02d}"
        cur = list(_RATES)[int(rng.integers(1, len(_RATES)))]
        who = f"passenger-{i}"
        cit = cities[int(rng.integers(len(cities)))]
        steps = [
            Step("lookup_airport", (("city", origin),)),
            Step("lookup_airport", (("city", dest),)),
            Step(
                "search_flights",
                (("date", date),),
                (("origin", 0, "code"), ("destination", 1, "code")),
            ),
        ]
        tail = [
            Step("get_fare", (), (("flight", 2, "flight"),)),
            Step("convert_currency", (("currency", cur),), (("amount", 3, "fare_usd"),)),
            Step("check_visa", (("citizenship", cit),), (("destination", 1, "code"),)),
            Step("get_weather", (("city", dest), ("date", date))),
            Step("book", (("passenger", who),), (("flight", 2, "flight"),)),
        ]
        length = 3 + i % 5  # 3..7
        extra = tail[:2] if length >= 5 else tail[:1] if length == 4 else []
        rest = [t for t in tail[2:]]
        rng.shuffle(rest)
        steps += extra + rest[: max(0, length - 3 - len(extra))]
        outputs: list = []
        truth = []
        for s in steps:
            out = tool_answer(s.tool, _resolve(s, outputs))
            outputs.append(out)
            truth.append(json.dumps(out, sort_keys=True))
        tasks.append(Task(id=i, steps=tuple(steps), truth=tuple(truth)))
    return tasks


def _main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    build_travel_server(extra_tools="--extra" in argv).run("stdio")


if __name__ == "__main__":
    _main()
