"""The start's PortHolder: 503 + Retry-After on the HTTP port until Serve routes, never Serve's 404."""

from __future__ import annotations

import http.server
import socket
import threading

import httpx
import pytest

from svclog.launch import any_replica_up
from svclog.serve.port_holder import PortHolder


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _NotFound(http.server.BaseHTTPRequestHandler):
    """Stands in for Serve's entry before any route exists."""

    def _404(self):
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = _404

    def log_message(self, *args):
        pass


class _SharedPortServer(http.server.ThreadingHTTPServer):
    def server_bind(self):  # as HAProxy and Serve's proxy bind: SO_REUSEPORT
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        super().server_bind()


@pytest.fixture
def holder():
    holder = PortHolder("127.0.0.1", _free_port())
    assert holder.open(), "the kernel refused the reuseport filter"
    yield holder
    holder.release()


def test_every_request_gets_503_with_retry_after(holder):
    url = f"http://127.0.0.1:{holder.port}"
    with httpx.Client(timeout=5) as client:
        for method, path, body in [
            ("GET", "/ready", None),
            ("POST", "/loki/api/v1/push", b"x" * 300_000),
            ("GET", "/loki/api/v1/tail?query=%7Ba%3D%22b%22%7D", None),
        ]:
            resp = client.request(method, url + path, content=body)
            assert resp.status_code == 503 and resp.headers["retry-after"] == "1", (method, path)
            assert "starting" in resp.text


def test_serve_bound_beside_the_holder_gets_no_request_until_the_release(holder):
    entry = _SharedPortServer(("127.0.0.1", holder.port), _NotFound)
    threading.Thread(target=entry.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{holder.port}/ready"
        held = [httpx.get(url, timeout=5).status_code for _ in range(100)]  # a new connection each
        assert set(held) == {503}
        holder.release()
        after = [httpx.get(url, timeout=5).status_code for _ in range(20)]
        assert set(after) == {404}  # the port now belongs to the entry alone
    finally:
        entry.shutdown()
        entry.server_close()


def test_release_frees_the_port(holder):
    holder.release()
    with socket.socket() as sock:  # no SO_REUSEPORT: binds only if nothing listens any more
        sock.bind(("127.0.0.1", holder.port))


def test_a_taken_port_is_not_held():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        assert not PortHolder("127.0.0.1", taken.getsockname()[1]).open()


def _row(pxname, svname, bck, status):
    return {"pxname": pxname, "svname": svname, "bck": bck, "status": status}


def test_haproxy_routes_only_once_a_replica_is_up():
    base = [
        _row("default_backend", "BACKEND", "0", "UP"),
        _row("stats", "BACKEND", "0", "UP"),
        _row("http_frontend", "FRONTEND", "", "OPEN"),
    ]
    fallback = _row("http-svclog", "SERVE_PROXY_ACTOR-fallback-x", "1", "UP")
    assert not any_replica_up(base)
    assert not any_replica_up(base + [fallback, _row("http-svclog", "BACKEND", "1", "UP")])
    assert not any_replica_up(base + [fallback, _row("http-svclog", "SERVE_REPLICA_svclog-gateway-1", "0", "DOWN")])
    assert any_replica_up(base + [fallback, _row("http-svclog", "SERVE_REPLICA_svclog-gateway-1", "0", "UP")])
