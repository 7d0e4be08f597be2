"""Post-hoc de-centering of within-task softmax heads in class-incremental learning."""

from .data import GaussianTasks, failure_construction, gaussian_tasks, random_spd
from .diagnostics import (
    OffsetDiagnostic,
    Separation,
    confusion_bound,
    gap_recovered,
    offset_diagnostic,
    separation,
    task_confusion,
)
from .estimators import (
    NCM,
    SLDA,
    DecenteredSoftmax,
    FeCAM,
    JointSoftmax,
    PostHocDecentering,
    SequentialSoftmax,
)
from .heads import (
    LinearHead,
    PopulationHeads,
    concat_heads,
    decenter,
    fit_joint_head,
    fit_within_task_head,
    population_heads,
)
from .stats import ClassStats, accumulate_stats, ledoit_wolf_intensity, population_stats

__all__ = [
    "NCM",
    "SLDA",
    "ClassStats",
    "DecenteredSoftmax",
    "FeCAM",
    "GaussianTasks",
    "JointSoftmax",
    "LinearHead",
    "OffsetDiagnostic",
    "PopulationHeads",
    "PostHocDecentering",
    "Separation",
    "SequentialSoftmax",
    "accumulate_stats",
    "concat_heads",
    "confusion_bound",
    "decenter",
    "failure_construction",
    "fit_joint_head",
    "fit_within_task_head",
    "gap_recovered",
    "gaussian_tasks",
    "ledoit_wolf_intensity",
    "offset_diagnostic",
    "population_heads",
    "population_stats",
    "random_spd",
    "separation",
    "task_confusion",
]
