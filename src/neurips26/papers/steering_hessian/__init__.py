"""Steering Hessian: curvature of a behavioural loss in steering-vector coordinates.

CAA steering vectors (mean contrastive residual differences) are added to a causal LM's
residual stream. The Hessian of the behavioural loss with respect to the steering vector
(by Hessian-vector products, dense or Lanczos) has a few sharp top eigen-directions;
removing the steering vector's component along them ("sharp removal") keeps the vector
nearly intact while cutting its directional curvature. Also: anti-steer rates of the sharp
part, KL attribution during generation, the random-subspace control and the polarity test.
Works on any Hugging Face causal LM whose decoder blocks
:func:`neurips26.common.models.llm.decoder_layers` finds.
"""

from .behaviours import BEHAVIOURS, BowScorer, ContrastiveSet, make_contrastive_set, open_prompts
from .generation import GenerationEval, generate_steered, generation_eval
from .hessian import (
    MAX_DENSE_DIM,
    SteeringHessian,
    finite_difference_hessian,
    lanczos,
    linear_softmax_hessian,
    linear_softmax_loss,
    steering_hessian,
)
from .sharp import (
    AntiSteer,
    PolarityTest,
    SharpRemoval,
    SharpRemovedSteerer,
    adaptive_k,
    anti_steer_rate,
    polarity_test,
    random_subspace_removal,
    sharp_removal,
)
from .steering import (
    SteeringObjective,
    answer_log_probs,
    behavioural_loss,
    caa_vector,
    check_model,
    check_positions,
    steer,
)

__all__ = [
    "BEHAVIOURS",
    "MAX_DENSE_DIM",
    "AntiSteer",
    "BowScorer",
    "ContrastiveSet",
    "GenerationEval",
    "PolarityTest",
    "SharpRemoval",
    "SharpRemovedSteerer",
    "SteeringHessian",
    "SteeringObjective",
    "adaptive_k",
    "answer_log_probs",
    "anti_steer_rate",
    "behavioural_loss",
    "caa_vector",
    "check_model",
    "check_positions",
    "finite_difference_hessian",
    "generate_steered",
    "generation_eval",
    "lanczos",
    "linear_softmax_hessian",
    "linear_softmax_loss",
    "make_contrastive_set",
    "open_prompts",
    "polarity_test",
    "random_subspace_removal",
    "sharp_removal",
    "steer",
    "steering_hessian",
]
