"""The suite-wide network block: remote connections fail, localhost still works."""

from __future__ import annotations

import socket
import threading

import pytest

from conftest import NetworkBlockedError


@pytest.mark.parametrize(
    "address", [("93.184.216.34", 80), ("2606:2800:220:1::", 443), ("huggingface.co", 443)]
)
def test_remote_connections_fail(address):
    family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s, pytest.raises(NetworkBlockedError):
        s.connect(address)
    with socket.socket(family, socket.SOCK_STREAM) as s, pytest.raises(NetworkBlockedError):
        s.connect_ex(address)


def test_create_connection_to_a_hub_fails():
    with pytest.raises(OSError):
        socket.create_connection(("huggingface.co", 443), timeout=1)


def test_localhost_still_works():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    t = threading.Thread(target=lambda: server.accept()[0].close())
    t.start()
    with socket.create_connection(("localhost", port), timeout=5):
        pass
    t.join(5)
    server.close()
