"""A local start's HTTP entry without Ray Serve: the gateway in a plain actor that serves HTTP itself.

On one node the gateway is a single replica, and Serve ran three processes to route to it: its
controller, HAProxy's manager and HAProxy (~340 MB RSS idle, measured in docs/architecture.md),
and every request crossed HAProxy before reaching the replica's own HTTP server. This actor hosts
the same `Gateway` (distributor, query frontend, admin, the route table) and runs uvicorn on a
thread of its own, bound to the service's port with SO_REUSEPORT: it binds beside the start's
PortHolder (svclog/serve/port_holder.py), which hands the port over once this actor listens. A
restart by Ray binds again in the constructor. Cluster starts and `ray.local_serve: true` keep Serve.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from typing import Any

import uvicorn

from svclog.config import Config
from svclog.serve.app import PUSH_PATHS
from svclog.serve.deployments import SHUTDOWN, Gateway
from svclog.serve.disconnect import CancelOnDisconnect

log = logging.getLogger("svclog")

NS = 1_000_000_000


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop when installed, as Ray's actors and Serve's replicas run theirs; asyncio's otherwise."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class HttpServer:
    """uvicorn serving one ASGI app on a socket bound at construction, on a thread and event loop
    of its own (the caller's thread, a Ray actor's, goes on answering calls)."""

    def __init__(self, app: Any, host: str, port: int, keep_alive_s: float = 120.0, graceful_s: float = 3.0):
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # the start's PortHolder holds the port in the same reuseport group until this server listens
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        self.sock.bind((host, port))
        self.server = uvicorn.Server(
            uvicorn.Config(
                app,
                lifespan="off",
                access_log=False,  # a line per request cost ~7% of the gateway's push CPU under Serve
                log_config=None,  # the process's logging stays as configured
                timeout_keep_alive=max(1, int(keep_alive_s)),
                timeout_graceful_shutdown=max(1, int(graceful_s)),
            )
        )
        self.thread = threading.Thread(target=self._run, name="http-server", daemon=True)
        self.error: BaseException | None = None

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        try:
            with asyncio.Runner(loop_factory=new_event_loop) as runner:
                runner.run(self.server.serve(sockets=[self.sock]))
        except BaseException as err:  # noqa: BLE001 - reported by `listening`
            self.error = err
            log.error("gateway HTTP server stopped: %s", err)

    def listening(self, timeout_s: float) -> bool:
        """Wait until the server accepts connections; False after `timeout_s`, raises what stopped it."""
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError(f"the gateway's HTTP server did not start: {self.error}")
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        return True

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop accepting, finish the requests in flight (up to the graceful timeout), close the port."""
        self.server.should_exit = True
        self.thread.join(timeout_s)
        if self.thread.is_alive():
            self.server.force_exit = True
            self.thread.join(1.0)
        self.sock.close()


class DirectGateway:
    """The gateway and its HTTP server in one actor; its methods are the start's and the stop's."""

    def __init__(self, cfg: Config, num_queriers: int, starting: bool = False):
        self.gateway = Gateway(cfg, num_queriers, starting=starting, direct=True)
        server = cfg.server
        self.http = HttpServer(
            # Serve's proxy did this: a client that leaves stops its query
            CancelOnDisconnect(self.gateway.http_app, pushes=PUSH_PATHS),
            server.http_listen_address,
            server.http_listen_port,
            keep_alive_s=server.http_server_idle_timeout / NS,
            graceful_s=SHUTDOWN["graceful_shutdown_timeout_s"],
        )
        self.http.start()

    def listening(self, timeout_s: float = 60.0) -> bool:
        return self.http.listening(timeout_s)

    def enter_standby(self, state: str) -> None:
        self.gateway.enter_standby(state)

    def close(self, timeout_s: float = 5.0) -> None:
        self.http.stop(timeout_s)
