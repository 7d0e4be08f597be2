"""AgentWeave: serving agent workflows by flow decomposition and flow-adaptive scheduling.

Public API: workflows (:mod:`.workflow`), clock-free schedulers and policies
(:mod:`.scheduler`), the simulated clock (:mod:`.sim`, simpy) and the real clock
(:mod:`.runtime`, asyncio). See :mod:`.scheduler` for the method and its deviations.
"""

from .runtime import AsyncRunResult, ModuleError, run_async
from .scheduler import (
    POLICIES,
    Action,
    AgentWeaveScheduler,
    AggregatedScheduler,
    DisaggregatedScheduler,
    FlowAdaptivePolicy,
    RequestState,
    Scheduler,
    StaticPolicy,
    SystemState,
    WorkflowStats,
    disaggregated_partition,
    make_policy,
)
from .sim import SimResult, estimate_capacity, simulate
from .workflow import (
    KINDS,
    TEMPLATES,
    LatencyModel,
    ModuleSpec,
    Request,
    Unit,
    Workflow,
    code_agent,
    critical_path_latency,
    debate,
    flow_decompose,
    kv_tokens,
    poisson_arrivals,
    rag_pipeline,
    react_loop,
)

__all__ = [
    "KINDS",
    "POLICIES",
    "TEMPLATES",
    "Action",
    "AgentWeaveScheduler",
    "AggregatedScheduler",
    "AsyncRunResult",
    "DisaggregatedScheduler",
    "FlowAdaptivePolicy",
    "LatencyModel",
    "ModuleError",
    "ModuleSpec",
    "Request",
    "RequestState",
    "Scheduler",
    "SimResult",
    "StaticPolicy",
    "SystemState",
    "Unit",
    "Workflow",
    "WorkflowStats",
    "code_agent",
    "critical_path_latency",
    "debate",
    "disaggregated_partition",
    "estimate_capacity",
    "flow_decompose",
    "kv_tokens",
    "make_policy",
    "poisson_arrivals",
    "rag_pipeline",
    "react_loop",
    "run_async",
    "simulate",
]
