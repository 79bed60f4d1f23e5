"""Serving the explorer's app with uvicorn on a socket bound beforehand (so that a free port, `0`,
is known before the server starts), in the foreground or, for tests, in a thread."""

from __future__ import annotations

import ipaddress
import socket
import threading
import time

import uvicorn
from starlette.applications import Starlette


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket listening on `host`:`port` (0: a free port); OSError when it cannot be bound."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def is_loopback(host: str) -> bool:
    """Whether `host` is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/"


class ExplorerServer:
    """uvicorn serving `app` on `sock`, quiet but for warnings."""

    def __init__(self, app: Starlette, sock: socket.socket):
        self.sock = sock
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self.thread: threading.Thread | None = None

    def run(self) -> None:
        """Serve until interrupted (Ctrl-C)."""
        self.server.run(sockets=[self.sock])

    def start(self) -> str:
        """Serve in a thread; the URL, once it is up."""
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("the explorer's server stopped as it started")
            time.sleep(0.01)
        return url_of(self.sock)

    def stop(self) -> None:
        self.server.should_exit = True
        if self.thread is not None:
            self.thread.join(timeout=10)
        self.sock.close()
