"""``python -m neurips26``: the same as the ``neurips26`` command."""

from neurips26.cli import main

if __name__ == "__main__":  # guarded: `reproduce` starts child processes with spawn
    raise SystemExit(main())
