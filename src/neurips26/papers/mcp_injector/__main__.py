"""``python -m neurips26.papers.mcp_injector proxy --config faults.yaml -- <server command>``."""

import sys

from .cli import main

if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["proxy"]:
        args = args[1:]
    sys.exit(main(args))
