"""The control plane's ports: one per component, never the same twice (a duplicate left kcm unable to listen)."""

from __future__ import annotations

import socket

from devcluster.control_plane import free_ports


def test_every_name_gets_its_own_free_loopback_port() -> None:
    names = [f"component-{i}" for i in range(64)]
    for _ in range(20):
        ports = free_ports(names)
        assert list(ports) == names
        assert len(set(ports.values())) == len(names), "no port is handed out twice"
    for port in ports.values():
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", port))  # released again: the component can listen on it
