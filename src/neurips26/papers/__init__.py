"""One sub-package per paper; see :mod:`neurips26.registry`."""
