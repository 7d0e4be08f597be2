"""The one place that touches private or version-specific parts of the ``mcp`` SDK (2.3.x)."""

from __future__ import annotations

from typing import Any

__all__ = ["SDK_VERSION", "memory_transport"]


def _sdk_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mcp")
    except PackageNotFoundError:  # pragma: no cover
        return "unknown"


SDK_VERSION = _sdk_version()


def memory_transport(server: Any) -> Any:
    """The SDK's in-memory JSON-RPC transport to an in-process ``MCPServer`` or ``Server``.

    ``mcp.client._memory.InMemoryTransport`` is private in 2.x; wrap it with
    :meth:`FaultInjector.wrap` for client-side injection over real JSON-RPC framing.

    Parameters
    ----------
    server : MCPServer or Server
        An in-process MCP server built with the SDK.

    Returns
    -------
    InMemoryTransport
        A transport to pass to ``mcp.Client`` (or to :meth:`FaultInjector.wrap`).
    """
    from mcp.client._memory import InMemoryTransport

    return InMemoryTransport(server)
