"""An authenticating reverse proxy for svclog: HTTP Basic auth in front, `X-Scope-OrgID` behind.

svclog has no authentication of its own (API.md, Authentication). This proxy owns the three
decisions that make a multi-tenant deployment safe: who the caller is (Basic credentials checked
against scrypt hashes in a YAML users file), which tenant(s) they act as (the proxy writes
`X-Scope-OrgID`; a client can narrow it to a subset of its own tenants, never widen it), and which
paths they may reach (tenant APIs for everyone, admin endpoints only for `admin: true` users,
`/ready` for anyone). HTTP is aiohttp's; bodies stream both ways and request bodies are capped.

    python examples/auth-proxy/proxy.py --listen 127.0.0.1:3101 \
        --upstream http://127.0.0.1:3100 --users examples/auth-proxy/users.example.yaml
    python examples/auth-proxy/proxy.py --hash-password      # prints a hash for the users file
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import contextlib
import getpass
import hashlib
import hmac
import logging
import re
import secrets
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import aiohttp
import yaml
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

log = logging.getLogger("svclog.auth_proxy")

TENANT_HEADER = "X-Scope-OrgID"
ACTOR_PATH_HEADERS = ("X-Svc-Actor-Path", "X-Loki-Actor-Path")
OPEN_PATHS = frozenset({"/ready"})
# Paths that act on the caller's tenant; everything else (/metrics, /config, /flush,
# /ingester/*, /log_level, ring pages, ...) is operator-only.
TENANT_PREFIXES = (
    "/svc/api/v1/",
    "/loki/api/v1/",
    "/api/legacy/",
    "/api/prom/",
    "/otlp/v1/",
    "/compat/api/v1/",
    "/prometheus/api/v1/",
)
TAIL_PATHS = frozenset({"/svc/api/v1/tail", "/loki/api/v1/tail", "/api/legacy/tail", "/api/prom/tail"})
# Never forwarded: per-connection headers (RFC 9110 7.6.1), the caller's credentials, and the
# headers this proxy decides itself.
DROPPED_HEADERS = frozenset(
    h.lower()
    for h in (
        "Connection",
        "Keep-Alive",
        "Proxy-Authenticate",
        "Proxy-Authorization",
        "TE",
        "Trailer",
        "Transfer-Encoding",
        "Upgrade",
        "Expect",
        "Host",
        "Authorization",
        "Content-Length",
        TENANT_HEADER,
    )
)
WEBSOCKET_HEADERS = (
    "Sec-WebSocket-Key",
    "Sec-WebSocket-Version",
    "Sec-WebSocket-Extensions",
    "Sec-WebSocket-Protocol",
    "Sec-WebSocket-Accept",
)

_TENANT_ID = re.compile(r"^[0-9A-Za-z!\-_.*'()]{1,150}$")
_CHUNK = 64 * 1024


# ---------------------------------------------------------------- passwords

SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1  # ~16 MiB and ~50 ms per check
_SCRYPT_MAXMEM = 64 * 1024 * 1024


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def hash_password(password: str, *, n: int = SCRYPT_N, r: int = SCRYPT_R, p: int = SCRYPT_P) -> str:
    """`scrypt$n$r$p$salt$digest` (base64), salted with 16 random bytes."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, dklen=32, maxmem=_SCRYPT_MAXMEM)
    return f"scrypt${n}${r}${p}${_b64(salt)}${_b64(digest)}"


@dataclass(frozen=True)
class PasswordHash:
    n: int
    r: int
    p: int
    salt: bytes
    digest: bytes

    @classmethod
    def parse(cls, encoded: str) -> PasswordHash:
        try:
            scheme, n, r, p, salt, digest = encoded.split("$")
            parsed = cls(
                int(n), int(r), int(p), base64.b64decode(salt, validate=True), base64.b64decode(digest, validate=True)
            )
        except (ValueError, binascii.Error) as err:
            raise ValueError("not a password hash made by --hash-password") from err
        if scheme != "scrypt" or parsed.n < 2 or parsed.n & (parsed.n - 1) or not parsed.digest:
            raise ValueError("only scrypt hashes with n a power of two are accepted")
        if 128 * parsed.r * parsed.n > _SCRYPT_MAXMEM // 2:
            raise ValueError("scrypt parameters need more memory than the proxy allows")
        return parsed

    def matches(self, password: str) -> bool:
        candidate = hashlib.scrypt(
            password.encode(),
            salt=self.salt,
            n=self.n,
            r=self.r,
            p=self.p,
            dklen=len(self.digest),
            maxmem=_SCRYPT_MAXMEM,
        )
        return hmac.compare_digest(candidate, self.digest)


# ---------------------------------------------------------------- users


class UsersFileError(ValueError):
    """A mistake in the users file; the message names the user."""


@dataclass(frozen=True)
class User:
    name: str
    password: PasswordHash
    tenants: tuple[str, ...]
    admin: bool = False
    group: str | None = None  # first level of the actor path, e.g. a team

    def actor_path(self) -> str:
        # Hashed so user names do not end up in the service's queues, metrics or logs.
        leaf = hashlib.sha256(f"svclog-actor:{self.name}".encode()).hexdigest()[:16]
        return f"{self.group}|{leaf}" if self.group else leaf


def _check_tenant(user: str, tenant: object) -> str:
    if not isinstance(tenant, str) or not _TENANT_ID.match(tenant) or tenant in (".", ".."):
        raise UsersFileError(f"user {user!r}: invalid tenant ID {tenant!r}")
    return tenant


def _parse_user(name: str, entry: object) -> User:
    if not isinstance(entry, dict):
        raise UsersFileError(f"user {name!r}: expected a mapping with password_hash and tenants")
    unknown = set(entry) - {"password_hash", "tenants", "admin", "group"}
    if unknown:
        raise UsersFileError(f"user {name!r}: unknown keys {sorted(unknown)}")
    try:
        password = PasswordHash.parse(str(entry.get("password_hash", "")))
    except ValueError as err:
        raise UsersFileError(f"user {name!r}: {err}") from None
    tenants = entry.get("tenants", [])
    tenants = [tenants] if isinstance(tenants, str) else tenants
    if not isinstance(tenants, list):
        raise UsersFileError(f"user {name!r}: tenants must be a list")
    group = entry.get("group")
    if group is not None and (not isinstance(group, str) or "|" in group or not group):
        raise UsersFileError(f"user {name!r}: group must be a non-empty string without '|'")
    admin = entry.get("admin", False)
    if not isinstance(admin, bool):
        raise UsersFileError(f"user {name!r}: admin must be true or false")
    if not tenants and not admin:
        raise UsersFileError(f"user {name!r}: needs at least one tenant (or admin: true)")
    return User(name, password, tuple(_check_tenant(name, t) for t in tenants), admin, group)


def load_users(path: Path) -> dict[str, User]:
    """Read and validate the users file; any mistake is a startup error naming the user."""
    doc = yaml.safe_load(path.read_text()) or {}
    users = doc.get("users") if isinstance(doc, dict) else None
    if not isinstance(users, dict) or not users:
        raise UsersFileError(f"{path}: expected a top-level 'users' mapping")
    for name in users:
        if not isinstance(name, str) or ":" in name or not name:
            raise UsersFileError(f"{path}: user names are non-empty strings without ':' ({name!r})")
    return {name: _parse_user(name, entry) for name, entry in users.items()}


class Authenticator:
    """Checks Basic credentials. Hashing runs off the event loop, a few at a time, and a
    success is remembered briefly so a client pushing every second costs one hash a minute."""

    def __init__(self, users: dict[str, User], *, cache_seconds: float = 60.0, concurrency: int = 4):
        self._users = users
        self._decoy = PasswordHash.parse(hash_password(secrets.token_hex(16)))
        self._cache_key = secrets.token_bytes(32)
        self._cache: dict[bytes, tuple[str, float]] = {}
        self._cache_seconds = cache_seconds
        self._slots = asyncio.Semaphore(concurrency)

    async def authenticate(self, authorization: str | None) -> User | None:
        credentials = _basic_credentials(authorization)
        if credentials is None:
            return None
        name, password = credentials
        key = hmac.digest(self._cache_key, f"{name}\0{password}".encode(), "sha256")
        cached = self._cache.get(key)
        if cached and cached[1] > time.monotonic():
            return self._users.get(cached[0])
        user = self._users.get(name)
        # Unknown users are checked against a decoy so timing does not reveal which names exist.
        expected = user.password if user else self._decoy
        async with self._slots:
            ok = await asyncio.get_running_loop().run_in_executor(None, expected.matches, password)
        if not ok or user is None:
            return None
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[key] = (name, time.monotonic() + self._cache_seconds)
        return user


def _basic_credentials(authorization: str | None) -> tuple[str, str] | None:
    scheme, _, token = (authorization or "").strip().partition(" ")
    if scheme.lower() != "basic" or not token:
        return None
    try:
        decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    name, sep, password = decoded.partition(":")
    return (name, password) if sep else None


# ---------------------------------------------------------------- policy


@dataclass(frozen=True)
class ProxyConfig:
    upstream: URL
    realm: str = "svclog"
    max_body_bytes: int = 16 * 1024 * 1024
    set_actor_path: bool = False
    connect_timeout: float = 10.0
    read_timeout: float = 300.0


def is_clean_path(raw_path: str) -> bool:
    """No dot segments and no encoded slashes, so the path we authorise is the path upstream routes."""
    return raw_path.startswith("/") and all(
        unquote(segment) not in (".", "..") and "/" not in unquote(segment) for segment in raw_path.split("/")
    )


def may_access(user: User, path: str) -> bool:
    if path.startswith(TENANT_PREFIXES):
        return bool(user.tenants)
    return user.admin


def scope_tenants(user: User, requested: str | None) -> str:
    """The `X-Scope-OrgID` to send: the client's value if it names only this user's tenants
    (so a multi-tenant user can push to one of them), otherwise all of the user's tenants."""
    wanted = [t for t in (requested or "").split("|") if t]
    if wanted and set(wanted) <= set(user.tenants):
        return "|".join(wanted)
    return "|".join(user.tenants)


def upstream_headers(request: web.Request, user: User | None, config: ProxyConfig) -> CIMultiDict[str]:
    connection_named = {h.strip().lower() for h in request.headers.get("Connection", "").split(",")}
    dropped = DROPPED_HEADERS | connection_named
    if config.set_actor_path and user is not None:
        dropped |= {h.lower() for h in ACTOR_PATH_HEADERS}
    headers = CIMultiDict((k, v) for k, v in request.headers.items() if k.lower() not in dropped)
    if request.content_length is not None:
        headers["Content-Length"] = str(request.content_length)
    if user is not None and user.tenants:
        headers[TENANT_HEADER] = scope_tenants(user, request.headers.get(TENANT_HEADER))
    if config.set_actor_path and user is not None:
        headers[ACTOR_PATH_HEADERS[0]] = user.actor_path()
    peer = request.remote or ""
    prior = request.headers.get("X-Forwarded-For")
    headers["X-Forwarded-For"] = f"{prior}, {peer}" if prior else peer
    headers["X-Forwarded-Proto"] = request.scheme
    return headers


# ---------------------------------------------------------------- the proxy

CONFIG = web.AppKey("config", ProxyConfig)
AUTH = web.AppKey("authenticator", Authenticator)
SESSION = web.AppKey("session", aiohttp.ClientSession)
_ADMISSION = "svclog.admission"


class BodyTooLarge(Exception):
    pass


def _plain(status: int, text: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, text=text + "\n", headers=headers)


async def admit(request: web.Request) -> User | None | web.Response:
    """Who may send this request: a User, None for an open path, or the refusal to send back."""
    if _ADMISSION in request:
        return request[_ADMISSION]
    config = request.app[CONFIG]
    path = request.raw_path.partition("?")[0]
    if not is_clean_path(path):
        result: User | None | web.Response = _plain(400, "path must not contain dot segments or encoded slashes")
    elif path in OPEN_PATHS and request.method in ("GET", "HEAD"):
        result = None
    else:
        user = await request.app[AUTH].authenticate(request.headers.get("Authorization"))
        if user is None:
            log.warning("refused %s %s from %s: no valid credentials", request.method, path, request.remote)
            result = _plain(401, "unauthorized", {"WWW-Authenticate": f'Basic realm="{config.realm}"'})
        elif not may_access(user, path):
            result = _plain(403, f"user {user.name} may not access {path}")
        elif (request.content_length or 0) > config.max_body_bytes:
            result = _plain(413, f"request body larger than {config.max_body_bytes} bytes")
        else:
            result = user
    request[_ADMISSION] = result
    return result


async def expect_continue(request: web.Request) -> web.StreamResponse | None:
    """Refuse before the client uploads a body it should not send (curl sends Expect for large bodies)."""
    admission = await admit(request)
    if isinstance(admission, web.StreamResponse):
        return admission
    if request.headers.get("Expect", "").lower() != "100-continue":
        return _plain(417, "unsupported Expect")
    await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    return None


async def handle(request: web.Request) -> web.StreamResponse:
    admission = await admit(request)
    if isinstance(admission, web.StreamResponse):
        return admission
    config = request.app[CONFIG]
    headers = upstream_headers(request, admission, config)
    url = URL(str(config.upstream).rstrip("/") + request.raw_path, encoded=True)
    path = request.raw_path.partition("?")[0]
    if path in TAIL_PATHS and request.headers.get("Upgrade", "").lower() == "websocket":
        return await forward_websocket(request, url, headers)
    return await forward_http(request, url, headers)


async def _capped(request: web.Request, limit: int, state: dict[str, bool]) -> AsyncIterator[bytes]:
    size = 0
    try:
        async for chunk in request.content.iter_chunked(_CHUNK):
            size += len(chunk)
            if size > limit:
                # Raising (not stopping) aborts the upstream request: it must never see a
                # truncated body.
                state["too_large"] = True
                raise BodyTooLarge
            yield chunk
    except (aiohttp.ClientPayloadError, ConnectionError):
        state["client_gone"] = True
        raise


async def forward_http(request: web.Request, url: URL, headers: CIMultiDict[str]) -> web.StreamResponse:
    config, session = request.app[CONFIG], request.app[SESSION]
    state = {"too_large": False, "client_gone": False}
    body = _capped(request, config.max_body_bytes, state) if request.body_exists else None
    response = web.StreamResponse()
    try:
        async with session.request(request.method, url, headers=headers, data=body, allow_redirects=False) as upstream:
            response.set_status(upstream.status, upstream.reason)
            for name, value in upstream.headers.items():
                if name.lower() not in DROPPED_HEADERS or name.lower() == "content-length":
                    response.headers.add(name, value)
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
    except (TimeoutError, aiohttp.ClientError, BodyTooLarge) as err:
        if response.prepared:
            raise  # mid-stream: drop the connection so the client sees a truncated response
        if state["too_large"]:
            return _plain(413, f"request body larger than {config.max_body_bytes} bytes")
        if state["client_gone"]:
            log.info("client went away while sending %s", url.path)
            return _plain(400, "incomplete request body")
        log.warning("upstream %s failed: %r", url.path, err)
        status = 504 if isinstance(err, TimeoutError) else 502
        return _plain(status, "upstream unavailable")
    await response.write_eof()
    return response


async def forward_websocket(request: web.Request, url: URL, headers: CIMultiDict[str]) -> web.StreamResponse:
    for name in WEBSOCKET_HEADERS:
        headers.popall(name, None)
    try:
        upstream = await request.app[SESSION].ws_connect(url, headers=headers, heartbeat=30.0)
    except aiohttp.WSServerHandshakeError as err:
        return _plain(err.status, f"upstream refused the WebSocket: {err.message}")
    except (TimeoutError, aiohttp.ClientError):
        return _plain(502, "upstream unavailable")
    client = web.WebSocketResponse(heartbeat=30.0)
    await client.prepare(request)
    async with upstream:
        pumps = [asyncio.ensure_future(_pump(client, upstream)), asyncio.ensure_future(_pump(upstream, client))]
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        for pump in pumps:
            pump.cancel()
        await client.close(code=upstream.close_code or aiohttp.WSCloseCode.OK)
    return client


async def _pump(
    source: web.WebSocketResponse | aiohttp.ClientWebSocketResponse,
    sink: web.WebSocketResponse | aiohttp.ClientWebSocketResponse,
) -> None:
    async for message in source:
        if message.type == aiohttp.WSMsgType.TEXT:
            await sink.send_str(message.data)
        elif message.type == aiohttp.WSMsgType.BINARY:
            await sink.send_bytes(message.data)
    await sink.close(code=source.close_code or aiohttp.WSCloseCode.OK)


def build_app(config: ProxyConfig, users: dict[str, User]) -> web.Application:
    app = web.Application()
    app[CONFIG] = config

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        app[AUTH] = Authenticator(users)
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=config.connect_timeout, sock_read=config.read_timeout)
        # Bodies pass through byte for byte: no decompression, no invented Accept-Encoding,
        # Content-Type or User-Agent.
        async with aiohttp.ClientSession(
            timeout=timeout,
            auto_decompress=False,
            connector=aiohttp.TCPConnector(limit=512),
            skip_auto_headers=("Accept-Encoding", "Content-Type", "User-Agent"),
        ) as session:
            app[SESSION] = session
            yield

    app.cleanup_ctx.append(lifecycle)
    app.router.add_route("*", "/{path:.*}", handle, expect_handler=expect_continue)
    return app


# ---------------------------------------------------------------- command line


async def serve(config: ProxyConfig, users: dict[str, User], host: str, port: int) -> None:
    # auto_decompress=False: a gzip push is forwarded as gzip, not inflated here.
    runner = web.AppRunner(build_app(config, users), auto_decompress=False)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    bound_host, bound_port = runner.addresses[0][:2]
    print(f"svclog auth proxy on http://{bound_host}:{bound_port} -> {config.upstream}", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def _read_new_password() -> str:
    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    first, second = getpass.getpass("password: "), getpass.getpass("again: ")
    if first != second:
        raise SystemExit("passwords differ")
    return first


def _host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError("expected HOST:PORT")
    return host.strip("[]") or "0.0.0.0", int(port)


def main(argv: Iterable[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--hash-password",
        action="store_true",
        help="read a password (terminal or stdin), print its hash for the users file",
    )
    parser.add_argument("--listen", type=_host_port, default="127.0.0.1:3101", help="HOST:PORT (port 0: any)")
    parser.add_argument("--upstream", default="http://127.0.0.1:3100", help="svclog base URL")
    parser.add_argument("--users", type=Path, help="YAML users file")
    parser.add_argument("--realm", default="svclog")
    parser.add_argument("--max-body-bytes", type=int, default=ProxyConfig.max_body_bytes)
    parser.add_argument(
        "--actor-path",
        action="store_true",
        help=f"set {ACTOR_PATH_HEADERS[0]} from the user (hashed) for per-user query fairness",
    )
    parser.add_argument("--read-timeout", type=float, default=ProxyConfig.read_timeout)
    args = parser.parse_args(None if argv is None else list(argv))
    if args.hash_password:
        print(hash_password(_read_new_password()))
        return
    if args.users is None:
        parser.error("--users is required")
    if '"' in args.realm or "\\" in args.realm:
        parser.error("--realm must not contain quotes or backslashes")
    try:
        users = load_users(args.users)
    except (OSError, ValueError, yaml.YAMLError) as err:
        raise SystemExit(f"users file: {err}") from None
    config = ProxyConfig(
        URL(args.upstream), args.realm, args.max_body_bytes, args.actor_path, read_timeout=args.read_timeout
    )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(config, users, *args.listen))


if __name__ == "__main__":
    main()
