"""neurips26: NeurIPS 2026 papers as working, tested, reproducible software.

Every paper lives in :mod:`neurips26.papers.<slug>` with a public API, an
experiment with three tiers (``smoke``, ``small``, ``paper``) and its claims as
data. The command ``neurips26`` lists, runs and reports them.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("neurips26")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
