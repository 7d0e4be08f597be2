"""GETO-LP: exact fixed-support Wasserstein barycenters on grids with layered flows."""

from .data import organ_densities, rgb_histogram, synthetic_densities
from .geto import (
    IPM_MIN_VARIABLES,
    SOLVERS,
    BarycenterResult,
    GETOBarycenter,
    GridSpec,
    LPModel,
    LPSize,
    SolverError,
    TransportResult,
    build_full_lp,
    build_geto_lp,
    full_lp_barycenter,
    geto_barycenter,
    geto_distance,
    grid_cost_matrix,
    lp_size,
    resolve_solver,
    w2_to_inputs,
)
from .recolor import quota_recolor

__all__ = [
    "IPM_MIN_VARIABLES",
    "SOLVERS",
    "BarycenterResult",
    "GETOBarycenter",
    "GridSpec",
    "LPModel",
    "LPSize",
    "SolverError",
    "TransportResult",
    "build_full_lp",
    "build_geto_lp",
    "full_lp_barycenter",
    "geto_barycenter",
    "geto_distance",
    "grid_cost_matrix",
    "lp_size",
    "organ_densities",
    "quota_recolor",
    "resolve_solver",
    "rgb_histogram",
    "synthetic_densities",
    "w2_to_inputs",
]
