"""examples/auth-proxy over real HTTP: a fake upstream (Starlette on uvicorn, in a thread) that
echoes what it received, and the proxy started from its command line. No Ray."""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect as ws_connect

PROXY_DIR = Path(__file__).resolve().parents[1] / "examples" / "auth-proxy"
PROXY_SCRIPT = PROXY_DIR / "proxy.py"
CAP = 256 * 1024
BIG = 5 * 1024 * 1024


def _load_proxy_module():
    spec = importlib.util.spec_from_file_location("svclog_example_auth_proxy", PROXY_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


proxy_mod = _load_proxy_module()


# ---------------------------------------------------------------- fake upstream


class Upstream:
    """Records every request whose body arrived in full."""

    def __init__(self):
        self.seen: list[dict] = []

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/ready", self.ready),
                Route("/big", self.big),
                Route("/gzipped", self.gzipped),
                WebSocketRoute("/loki/api/v1/tail", self.tail),
                Route("/{path:path}", self.echo, methods=["GET", "POST", "PUT", "DELETE", "HEAD"]),
            ]
        )

    async def ready(self, request: Request) -> Response:
        return PlainTextResponse("ready")

    async def big(self, request: Request) -> Response:
        async def chunks():
            for _ in range(BIG // 65536):
                yield b"x" * 65536

        return StreamingResponse(chunks(), media_type="application/octet-stream")

    async def gzipped(self, request: Request) -> Response:
        return Response(
            gzip.compress(b"compressed upstream body"),
            headers={"Content-Encoding": "gzip", "Content-Type": "text/plain"},
        )

    async def echo(self, request: Request) -> Response:
        body = await request.body()
        record = {
            "method": request.method,
            "path": request.url.path,
            "query": request.scope["query_string"].decode(),
            "headers": {k.decode().lower(): v.decode() for k, v in request.scope["headers"]},
            "body_len": len(body),
            "body_sha256": hashlib.sha256(body).hexdigest(),
        }
        self.seen.append(record)
        return JSONResponse(record)

    async def tail(self, websocket: WebSocket) -> None:
        await websocket.accept()
        await websocket.send_text(
            json.dumps({"headers": dict(websocket.headers), "query": websocket.scope["query_string"].decode()})
        )
        message = await websocket.receive_text()
        await websocket.send_text("echo:" + message)
        await websocket.close()


@pytest.fixture(scope="module")
def upstream():
    fake = Upstream()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(fake.app(), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.time() + 10
    while not server.started and time.time() < deadline:
        time.sleep(0.02)
    assert server.started
    fake.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    yield fake
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()


# ---------------------------------------------------------------- the proxy under test

PASSWORDS = {"alice": "alice-pw", "bob": "bob-pw", "ops": "ops-pw"}


@pytest.fixture(scope="module")
def users_file(tmp_path_factory) -> Path:
    h = {name: proxy_mod.hash_password(pw) for name, pw in PASSWORDS.items()}
    path = tmp_path_factory.mktemp("auth-proxy") / "users.yaml"
    path.write_text(f"""
users:
  alice: {{password_hash: "{h["alice"]}", tenants: [team-a], group: blue}}
  bob: {{password_hash: "{h["bob"]}", tenants: [team-a, team-b]}}
  ops: {{password_hash: "{h["ops"]}", tenants: [], admin: true}}
""")
    return path


def start_proxy(upstream_url: str, users: Path, log_path: Path, *extra: str):
    """Start the proxy from its command line on a free port; returns (process, base URL)."""
    log_file = open(log_path, "w")  # noqa: SIM115 - closed with the process below
    proc = subprocess.Popen(
        [
            sys.executable,
            str(PROXY_SCRIPT),
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            upstream_url,
            "--users",
            str(users),
            "--max-body-bytes",
            str(CAP),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=log_file,
        text=True,
    )
    proc.log_file = log_file
    line = proc.stdout.readline()  # "svclog auth proxy on http://127.0.0.1:PORT -> ..."
    assert "auth proxy on http://" in line, (line, log_path.read_text())
    return proc, line.split(" on ", 1)[1].split(" ", 1)[0]


def stop_proxy(proc) -> None:
    proc.terminate()
    proc.wait(timeout=10)
    proc.log_file.close()


@pytest.fixture(scope="module")
def proxy(upstream, users_file, tmp_path_factory):
    proc, url = start_proxy(upstream.url, users_file, tmp_path_factory.mktemp("log") / "proxy.log", "--actor-path")
    yield url
    stop_proxy(proc)


@pytest.fixture
def client(proxy):
    with httpx.Client(base_url=proxy, timeout=20) as c:
        yield c


def basic(user: str, password: str | None = None) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password or PASSWORDS[user]}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


# ---------------------------------------------------------------- authentication


def test_ready_is_open_without_credentials(client):
    response = client.get("/ready")
    assert response.status_code == 200 and response.text == "ready"


@pytest.mark.parametrize(
    "headers",
    [
        {},
        basic("alice", "wrong"),
        basic("mallory", "whatever"),
        {"Authorization": "Basic !!!not-base64"},
        {"Authorization": "Bearer abc"},
    ],
    ids=["none", "wrong-password", "unknown-user", "malformed", "other-scheme"],
)
def test_protected_paths_need_valid_credentials(client, upstream, headers):
    before = len(upstream.seen)
    for path in ("/loki/api/v1/labels", "/svc/api/v1/push", "/metrics", "/ready/x"):
        response = client.get(path, headers=headers)
        assert response.status_code == 401, path
        assert response.headers["WWW-Authenticate"] == 'Basic realm="svclog"'
    assert len(upstream.seen) == before  # nothing reached the service


def test_user_tenant_replaces_forged_header(client):
    forged = {"X-Scope-OrgID": "team-b", "X-Svc-Actor-Path": "someone-else", **basic("alice")}
    got = client.get("/loki/api/v1/labels", headers=forged).json()["headers"]
    assert got["x-scope-orgid"] == "team-a"
    leaf = hashlib.sha256(b"svclog-actor:alice").hexdigest()[:16]
    assert got["x-svc-actor-path"] == f"blue|{leaf}"
    assert "authorization" not in got  # the caller's password never reaches the service


@pytest.mark.parametrize(
    ("sent", "expected"),
    [
        (None, "team-a|team-b"),
        ("team-b", "team-b"),
        ("team-b|team-a", "team-b|team-a"),
        ("team-c", "team-a|team-b"),
        ("team-a|team-c", "team-a|team-b"),
    ],
)
def test_multi_tenant_user_may_only_narrow(client, sent, expected):
    headers = basic("bob") | ({"X-Scope-OrgID": sent} if sent else {})
    assert client.get("/svc/api/v1/query", headers=headers).json()["headers"]["x-scope-orgid"] == expected


def test_admin_paths_are_for_admins_only(client):
    assert client.get("/metrics", headers=basic("alice")).status_code == 403
    assert client.post("/flush", headers=basic("bob")).status_code == 403
    got = client.get("/metrics", headers=basic("ops")).json()
    assert got["path"] == "/metrics" and "x-scope-orgid" not in got["headers"]
    # an admin with no tenant cannot act on tenant data
    assert client.get("/loki/api/v1/labels", headers=basic("ops")).status_code == 403


@pytest.mark.parametrize(
    "path", ["/svc/api/v1/../../flush", "/svc/api/v1/%2e%2e/%2E%2E/flush", "/svc/api/v1/label/a%2Fb/values"]
)
def test_dot_segments_and_encoded_slashes_are_refused(proxy, path):
    # A raw socket: HTTP clients normalise such paths before sending them.
    auth = basic("alice")["Authorization"]
    head = f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: {auth}\r\nConnection: close\r\n\r\n"
    assert _raw_exchange(proxy, head).startswith(b"HTTP/1.1 400")


# ---------------------------------------------------------------- pass-through


def test_body_query_and_content_headers_pass_through(client):
    payload = gzip.compress(json.dumps({"streams": [{"stream": {"app": "x"}, "values": [["1", "line"]]}]}).encode())
    query = "query=%7Bapp%3D%22x%22%7D%20%7C%3D%20%22a%20b%22&match[]=a&match[]=b&limit=5"
    response = client.post(
        f"/loki/api/v1/push?{query}",
        content=payload,
        headers={**basic("alice"), "Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    got = response.json()
    assert response.status_code == 200
    assert got["method"] == "POST" and got["path"] == "/loki/api/v1/push" and got["query"] == query
    # forwarded byte for byte: still gzip, same length and hash
    assert got["body_len"] == len(payload)
    assert got["body_sha256"] == hashlib.sha256(payload).hexdigest()
    assert got["headers"]["content-type"] == "application/json"
    assert got["headers"]["content-encoding"] == "gzip"
    assert got["headers"]["content-length"] == str(len(payload))


@pytest.mark.parametrize("method", ["PUT", "DELETE"])
def test_methods_pass_through(client, method):
    got = client.request(method, "/svc/api/v1/delete?request_id=7", headers=basic("alice")).json()
    assert got["method"] == method and got["query"] == "request_id=7"


def test_chunked_body_under_the_cap_streams_through(client):
    chunks = [bytes([i]) * 32768 for i in range(6)]  # 192 KiB < CAP, no Content-Length
    response = client.post("/svc/api/v1/push", content=iter(chunks), headers=basic("alice"))
    got = response.json()
    assert got["body_len"] == sum(map(len, chunks))
    assert got["body_sha256"] == hashlib.sha256(b"".join(chunks)).hexdigest()


def test_large_and_compressed_responses_stream_back(client):
    with client.stream("GET", "/big", headers=basic("ops")) as response:
        assert response.status_code == 200
        assert sum(len(chunk) for chunk in response.iter_raw()) == BIG
    response = client.get("/gzipped", headers=basic("ops"))
    assert response.headers["content-encoding"] == "gzip"
    assert response.text == "compressed upstream body"


# ---------------------------------------------------------------- limits


def test_declared_oversize_body_is_413(client, upstream):
    before = len(upstream.seen)
    response = client.post("/svc/api/v1/push", content=b"x" * (CAP + 1), headers=basic("alice"))
    assert response.status_code == 413
    assert len(upstream.seen) == before


def test_chunked_oversize_body_is_413_and_never_completes_upstream(client, upstream):
    marker = "/svc/api/v1/push?marker=chunked-oversize"
    chunks = [b"y" * 65536 for _ in range(CAP // 65536 + 2)]
    response = client.post(marker, content=iter(chunks), headers=basic("alice"))
    assert response.status_code == 413
    time.sleep(0.2)
    assert not [r for r in upstream.seen if r["query"] == "marker=chunked-oversize"]


def _raw_exchange(proxy: str, head: str) -> bytes:
    url = httpx.URL(proxy)
    with socket.create_connection((url.host, url.port), timeout=10) as sock:
        sock.sendall(head.encode())
        return sock.recv(200)


def test_expect_100_continue_refuses_before_the_body_is_sent(proxy):
    head = "POST /svc/api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nExpect: 100-continue\r\n{auth}\r\n"
    assert _raw_exchange(proxy, head.format(auth="")).startswith(b"HTTP/1.1 401")
    auth = basic("alice")["Authorization"]
    big = head.replace("Content-Length: 10", f"Content-Length: {CAP + 1}")
    assert _raw_exchange(proxy, big.format(auth=f"Authorization: {auth}\r\n")).startswith(b"HTTP/1.1 413")
    assert _raw_exchange(proxy, head.format(auth=f"Authorization: {auth}\r\n")).startswith(b"HTTP/1.1 100")


def test_unreachable_upstream_is_502(users_file, tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"  # bound, never listening
        proc, url = start_proxy(dead, users_file, tmp_path / "proxy.log")
        try:
            assert httpx.get(url + "/loki/api/v1/labels", headers=basic("alice")).status_code == 502
        finally:
            stop_proxy(proc)


# ---------------------------------------------------------------- WebSocket tail


def test_websocket_tail_passes_through_with_mapped_tenant(proxy):
    url = proxy.replace("http://", "ws://") + "/loki/api/v1/tail?query=%7Bapp%3D%22x%22%7D"
    headers = basic("alice") | {"X-Scope-OrgID": "team-b"}
    with ws_connect(url, additional_headers=headers, open_timeout=10) as ws:
        first = json.loads(ws.recv(timeout=10))
        assert first["headers"]["x-scope-orgid"] == "team-a"
        assert "authorization" not in first["headers"]
        assert first["query"] == "query=%7Bapp%3D%22x%22%7D"
        ws.send("hello")
        assert ws.recv(timeout=10) == "echo:hello"


def test_websocket_tail_without_credentials_is_401(proxy):
    url = proxy.replace("http://", "ws://") + "/loki/api/v1/tail"
    with pytest.raises(InvalidStatus) as err:
        ws_connect(url, open_timeout=10)
    assert err.value.response.status_code == 401
    assert err.value.response.headers["WWW-Authenticate"] == 'Basic realm="svclog"'


# ---------------------------------------------------------------- users file and hashes


def test_password_hashes_are_salted_scrypt():
    first, second = proxy_mod.hash_password("pw"), proxy_mod.hash_password("pw")
    assert first != second and first.startswith("scrypt$")
    parsed = proxy_mod.PasswordHash.parse(first)
    assert parsed.matches("pw") and not parsed.matches("pw ")


def test_hash_password_command_line():
    out = subprocess.run(
        [sys.executable, str(PROXY_SCRIPT), "--hash-password"],
        input="s3cret\n",
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout.strip()
    assert proxy_mod.PasswordHash.parse(out).matches("s3cret")


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('{password_hash: "plain", tenants: [a]}', "not a password hash"),
        ('{password_hash: "%s", tenants: ["a|b"]}', "invalid tenant"),
        ('{password_hash: "%s", tenants: []}', "at least one tenant"),
        ('{password_hash: "%s", tenants: [a], role: x}', "unknown keys"),
    ],
)
def test_users_file_mistakes_name_the_user(tmp_path, entry, message):
    if "%s" in entry:
        entry = entry % proxy_mod.hash_password("pw", n=2)
    path = tmp_path / "users.yaml"
    path.write_text(f"users:\n  carol: {entry}\n")
    with pytest.raises(ValueError, match=message) as err:
        proxy_mod.load_users(path)
    assert "carol" in str(err.value)


def test_example_users_file_loads():
    users = proxy_mod.load_users(PROXY_DIR / "users.example.yaml")
    assert users["alice"].password.matches("alice-demo-password")
    assert users["bob"].tenants == ("team-a", "team-b") and users["ops"].admin
