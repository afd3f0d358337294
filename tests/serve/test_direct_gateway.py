"""A local start's gateway serving HTTP itself: it takes the port over from the start's PortHolder,
answers on it, and closes it when stopped; only cluster starts and `ray.local_serve` use Serve."""

from __future__ import annotations

import socket

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from svclog import launch
from svclog.config import load_config
from svclog.launch import uses_serve
from svclog.serve.admin_backend import _deployment_states
from svclog.serve.deployments import direct_gateway_states
from svclog.serve.direct_gateway import DirectGateway, HttpServer
from svclog.serve.port_holder import PortHolder
from svclog.services import State


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _app() -> Starlette:
    async def ready(request):
        return PlainTextResponse("ready\n")

    return Starlette(routes=[Route("/ready", ready)])


def test_the_gateway_takes_the_port_over_from_the_holder_and_closes_it_when_stopped():
    port = _free_port()
    holder = PortHolder("127.0.0.1", port)
    if not holder.open():
        pytest.fail("the kernel refused the reuseport filter")
    server = HttpServer(_app(), "127.0.0.1", port, keep_alive_s=5, graceful_s=1)
    try:
        server.start()
        assert server.listening(10)
        url = f"http://127.0.0.1:{port}/ready"
        with httpx.Client(timeout=5) as client:
            assert client.get(url).status_code == 503  # the holder still has every connection
        holder.release()
        with httpx.Client(timeout=5) as client:
            for _ in range(5):
                resp = client.get(url)
                assert resp.status_code == 200 and resp.text == "ready\n"
    finally:
        holder.release()
        server.stop(5)
    assert not server.thread.is_alive()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/ready", timeout=2)


def test_a_server_that_cannot_start_says_why():
    port = _free_port()
    with socket.socket() as taken:  # bound without SO_REUSEPORT: nobody may share it
        taken.bind(("127.0.0.1", port))
        taken.listen(1)
        with pytest.raises(OSError):
            HttpServer(_app(), "127.0.0.1", port)


def test_only_cluster_starts_and_local_serve_run_on_serve():
    assert not uses_serve(load_config(None, []))
    assert uses_serve(load_config(None, ["-ray.local-serve=true"]))
    assert uses_serve(load_config(None, ["-ray.address=auto"]))


def test_a_direct_gateway_reports_itself_running():
    assert _deployment_states(direct_gateway_states) == {"gateway": (State.RUNNING, "")}


class _GatewayHere(DirectGateway):
    """A gateway hosted in the stopping process, recording the stop's calls (no Ray, no HTTP)."""

    def __init__(self):
        self.calls: list[tuple] = []

    def enter_standby(self, state: str) -> None:
        self.calls.append(("standby", state))

    def close(self, timeout_s: float = 5.0) -> None:
        self.calls.append(("close",))


def test_a_stop_puts_a_gateway_hosted_here_in_standby_first_and_closes_its_port_last():
    gateway = _GatewayHere()
    launch.stop({"gateway": gateway})
    assert gateway.calls == [("standby", "stopping"), ("close",)]
