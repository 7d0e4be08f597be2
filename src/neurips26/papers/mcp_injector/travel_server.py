"""Stdio entry point of the travel-desk server (``python -m ...mcp_injector.travel_server``)."""

from .travel import _main

if __name__ == "__main__":
    _main()
