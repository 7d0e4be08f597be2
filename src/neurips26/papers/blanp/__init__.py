"""BLANP: layer-local training by antithetic node perturbation against a frozen EMA critic.

Each block of a network is trained from its detached input and the labels only. BLANP
perturbs the block's pre-activation with antithetic noise, scores both perturbed outputs
with a frozen exponential-moving-average copy of the block's local classifier and turns
the central difference into a gradient estimate; BLANP-Exact uses the exact gradient of
the same local loss under a stop-gradient. No gradient crosses a block boundary, so at most
one block's graph is alive at a time and activation memory does not grow with depth.
"""

from .estimators import (
    antithetic_grad,
    central_difference,
    forward_difference,
    forward_difference_grad,
)
from .local import (
    MODES,
    BLANPNet,
    GlobalPoolHead,
    LayerStats,
    LocalLayer,
    StepResult,
    split_block,
)
from .memory import SavedTensorMeter, StepCost, measure_step, peak_saved_bytes
from .optim import BLANPOptimizer
from .training import (
    BLANP,
    DGL,
    Backprop,
    BLANPExact,
    LocalTrainResult,
    PlateauStop,
    local_net,
    make_model,
    predict_logits,
    train_backprop,
    train_local,
)

__all__ = [
    "BLANP",
    "DGL",
    "MODES",
    "BLANPExact",
    "BLANPNet",
    "BLANPOptimizer",
    "Backprop",
    "GlobalPoolHead",
    "LayerStats",
    "LocalLayer",
    "LocalTrainResult",
    "PlateauStop",
    "SavedTensorMeter",
    "StepCost",
    "StepResult",
    "antithetic_grad",
    "central_difference",
    "forward_difference",
    "forward_difference_grad",
    "local_net",
    "make_model",
    "measure_step",
    "peak_saved_bytes",
    "predict_logits",
    "split_block",
    "train_backprop",
    "train_local",
]
