"""Registry entry for mcp_injector (standard library and neurips26.registry only)."""

from neurips26.registry import Claim, Paper

_SMALL = ("small", "paper")

PAPER = Paper(
    slug="mcp_injector",
    title="MCP-Injector: seeded, protocol-aware fault injection for Model Context Protocol tools",
    seed="004_839af22534344a66.txt",
    paragraph=11,
    field="LLM agents / reliability testing",
    grade="C",
    summary=(
        "A middleware on the Model Context Protocol tool-call path that injects faults of "
        "chosen persistence (permanent, transient, intermittent) from seedable, replayable "
        "schedules calibrated on mined MCP incidents, without changing agent or server. The "
        "paper finds calibrated faults cut LLM agents' task completion by 60%, that larger "
        "models with longer tool chains meet more faults, and that the framework's error "
        "handling matters more than model size. We build the middleware for real on the "
        "official mcp SDK (server middleware, client transport wrapper, stdio proxy) and "
        "check the mechanisms with scripted MCP-client agents."
    ),
    claims=(
        Claim(
            id="schedule_fidelity",
            kind="check",
            statement=(
                "Schedules are faithful to the profile: the modes and persistence classes of "
                "5,000 calibrated incidents fit the profile's weights (chi-square)."
            ),
            paper_value="not stated; spec: chi-square p > 0.01",
            metric="fidelity_min_p",
            comparison=">",
            target=0.01,
        ),
        Claim(
            id="intermittent_rate",
            kind="check",
            statement="An intermittent rule's empirical fault rate matches its p.",
            paper_value="not stated; spec: within 3 binomial SE",
            metric="intermittent_abs_z",
            comparison="<=",
            target=3.0,
        ),
        Claim(
            id="replayable",
            kind="check",
            statement=(
                "Seedable and replayable: the same seed gives identical fault logs and "
                "outcomes (in-memory and over stdio), a recorded log replays exactly, and a "
                "different seed differs."
            ),
            paper_value="qualitative",
            metric="replay_ok",
            comparison="==",
            target=1.0,
        ),
        Claim(
            id="completion_drop",
            statement="Calibrated faults cut mean task completion (calibrated vs no faults).",
            paper_value="-60% (LLM agents; not comparable); spec: drop >= 30%",
            metric="completion_drop",
            no_control=(
                "The drop is measured against its own control: the 'none' condition runs the "
                "same injector in the loop with an empty fault profile, on the same tasks, "
                "agents and seeds, so the only difference between the arms is the faults."
            ),
            comparison=">=",
            target=0.30,
            diagnostics=(
                "completion_uniform_severe_small",
                "completion_uniform_severe_large",
                "completion_none_small",
                "completion_none_large",
            ),
            tiers=_SMALL,
        ),
        Claim(
            id="completion_drop_significant",
            statement="The completion drop is significant (Mann-Whitney U, two-sided).",
            paper_value="p < 1e-56 over 1,350 cells; spec: p < 1e-6",
            metric="mannwhitney_p",
            no_control=(
                "A test's p-value against the fault-free arm (the same injector with an empty "
                "profile, same tasks and seeds); the test's null distribution is the control "
                "of chance."
            ),
            comparison="<",
            target=1e-6,
            diagnostics=("mannwhitney_p_more_cells", "mannwhitney_p_uniform_severe"),
            tiers=_SMALL,
        ),
        Claim(
            id="large_better_without_faults",
            kind="check",
            statement=(
                "The larger agent scores higher without faults. A check: our scripted large "
                "agent is set to a higher accuracy (0.95) than the small one, so this holds "
                "by construction."
            ),
            paper_value="qualitative (120B > 20B fault-free)",
            metric="large_minus_small_none",
            comparison=">",
            target=0.0,
            tiers=_SMALL,
        ),
        Claim(
            id="large_worse_under_faults",
            statement="Under calibrated faults the larger agent completes less than the smaller.",
            paper_value="qualitative (scaling paradox)",
            metric="small_minus_large_calibrated",
            control="small_minus_large_none",
            comparison=">",
            target=0.0,
            tiers=_SMALL,
        ),
        Claim(
            id="large_meets_more_faults",
            kind="check",
            statement=(
                "The larger agent's longer chains meet more faults per task. A check: our "
                "scripted large agent makes about 1.8x the small one's calls at the same "
                "per-call fault rate, so this holds by construction."
            ),
            paper_value="qualitative (mechanism of the paradox)",
            metric="faulted_calls_large_minus_small",
            comparison=">",
            target=0.0,
            tiers=_SMALL,
        ),
        Claim(
            id="stack_beats_size",
            statement=(
                "The framework's error handling matters more than size: partial eta^2 of "
                "stack exceeds that of size (two-way type-II ANOVA on faulted cells)."
            ),
            paper_value="qualitative; spec: eta2(stack) > eta2(size)",
            metric="eta2_stack_minus_size",
            control="eta2_stack_minus_size_none",
            comparison=">",
            target=0.0,
            tiers=_SMALL,
        ),
        Claim(
            id="stack_size_interaction",
            statement="Stack x size interaction is significant.",
            paper_value="significant; spec: p < 0.05",
            metric="interaction_p",
            control="interaction_p_none",
            comparison="<",
            target=0.05,
            diagnostics=("interaction_p_more_cells", "interaction_p_calibrated"),
            tiers=_SMALL,
        ),
        Claim(
            id="transient_recovered",
            kind="check",
            statement="Retries recover transient faults.",
            paper_value="qualitative; spec: >= 0.8 of faulted calls recovered",
            metric="recovery_transient",
            comparison=">=",
            target=0.8,
            tiers=_SMALL,
        ),
        Claim(
            id="permanent_not_recovered",
            kind="check",
            statement="Retries do not recover permanent faults.",
            paper_value="qualitative; spec: <= 0.1 recovered",
            metric="recovery_permanent",
            comparison="<=",
            target=0.1,
            tiers=_SMALL,
        ),
    ),
    deviations=(
        "The six failure modes (timeout, connection_drop, protocol_error, tool_error, "
        "malformed_result, empty_result) are inferred; the abstract does not list them.",
        "The mined distribution (57,240 threads, 1,774 repositories) is unavailable offline: "
        "the shipped calibrated profile has placeholder weights and a per-call incident rate "
        "of 0.1; profile_from_counts mirrors the calibration step on anyone's counts.",
        "Calibrated faults are a renewal process of incidents per (connection, tool); "
        "transient incidents last 2 calls, intermittent ones 8 calls at p = 0.5.",
        "Scripted MCP-client agents stand in for 20B/120B LLMs in three frameworks: 'size' = "
        "step accuracy (0.85 / 0.95) plus verification calls (about 1.8x calls for large); "
        "'stack' = plan-and-execute with 2 retries, an observation loop that aborts on "
        "exceptions, retry-with-backoff that takes is_error text as an answer. The chain-"
        "length effect is therefore built in; the experiment checks its accounting.",
        "A toy travel-desk MCP server (7 deterministic tools) and 25 tasks of 3-7 calls "
        "replace the paper's benchmark tasks.",
        "Timeouts drop the response (client side) or hold the handler until cancelled "
        "(server side); the in-memory runs use a 0.05 s client timeout.",
        "The stateless 2026-07-28 protocol has no connections: there the server middleware "
        "counts calls per tool per server.",
    ),
    tiers=(
        (
            "smoke",
            "Fidelity on 1,000 incidents; replay on 2 tasks; grid 2 sizes x 1 stack x "
            "{none, calibrated} x 2 tasks in memory; seconds.",
        ),
        (
            "small",
            "Fidelity on 5,000 incidents; replay on 10 tasks in memory and 5 tasks over stdio "
            "(a server subprocess per cell); grid 2 sizes x 3 stacks x 3 conditions x 25 "
            "tasks = 450 cells in memory; well under a minute of CPU.",
        ),
        (
            "paper",
            "As small with 75 tasks per group (1,350 cells as in the paper), replay on 25 "
            "tasks and 15 stdio cells; a few minutes. Same scripted agents: run_grid(agent=...) "
            "takes a real (LLM) agent for people who can run one.",
        ),
    ),
)
