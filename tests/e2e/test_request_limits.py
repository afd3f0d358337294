"""Request bodies over the cap are refused at once with 413 on every route (push keeps its own cap)."""

from __future__ import annotations

import socket
import time
from urllib.parse import urlparse

import httpx
import pytest

pytestmark = pytest.mark.ray
FORM = "application/x-www-form-urlencoded"


def _raw_post(svc, path: str, headers: str, body: bytes, timeout: float = 6.0) -> bytes:
    url = urlparse(svc.url)
    with socket.create_connection((url.hostname, url.port), timeout=timeout) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: svclog\r\nX-Scope-OrgID: limits\r\n{headers}\r\n".encode() + body)
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer.split(b"\r\n\r\n", 1)[1]) < _length(answer):
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
        return answer


def _length(answer: bytes) -> int:
    for line in answer.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":", 1)[1])
    return 0


@pytest.mark.parametrize(
    "path",
    [
        "/svc/api/v1/query_range",
        "/svc/api/v1/query",
        "/svc/api/v1/series",
        "/svc/api/v1/labels",
        "/svc/api/v1/delete",
        "/log_level",
        "/svc/api/v1/rules/limits-ns",
    ],
)
def test_declared_oversized_body_is_refused_at_once(svc, path):
    began = time.monotonic()
    answer = _raw_post(svc, path, f"Content-Type: {FORM}\r\nContent-Length: 999999999\r\n", b"query=1")
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"request body too large: 999999999 bytes > limit" in answer
    assert time.monotonic() - began < 6


def test_streamed_oversized_form_is_cut_off(svc):
    cap = min(svc.cfg.server.grpc_server_max_recv_msg_size, svc.cfg.server.max_request_body_bytes)

    def body():
        yield b"query=" + b"x" * 1024
        for _ in range(cap // (1 << 20) + 2):
            yield b"y" * (1 << 20)

    resp = httpx.post(
        svc.url + "/svc/api/v1/query_range",
        content=body(),
        timeout=60,
        headers={"X-Scope-OrgID": "limits", "Content-Type": FORM},
    )
    assert resp.status_code == 413 and f"more than {cap} bytes" in resp.text, resp.text


def test_form_posts_within_the_cap_still_work(svc):
    resp = httpx.post(
        svc.url + "/svc/api/v1/labels", data={"start": "0"}, headers={"X-Scope-OrgID": "limits"}, timeout=60
    )
    assert resp.status_code == 200, resp.text


def test_push_keeps_its_own_cap_and_message(svc):
    answer = _raw_post(
        svc,
        "/svc/api/v1/push",
        f"Content-Type: application/json\r\nContent-Length: {svc.cfg.server.max_request_body_bytes + 1}\r\n",
        b"{}",
    )
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"for /svc/api/v1/push" not in answer  # the push handler's own message, not the middleware's
