"""Admin routes over ASGI with a fake backend: /ready, /services, /log_level, ingester shutdown, rings."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest

from svclog.distributor.distributor import IngestionBlocked
from svclog.model import NotFoundError
from svclog.ring.ring import Member
from svclog.ring.status_page import RingView
from svclog.serve.admin_routes import parse_bool
from svclog.serve.app import Services
from svclog.services import State
from tests.fuzz.harness import app_with

S = 1_000_000_000
NOW = 1_700_000_000 * S


class FakeAdmin:
    def __init__(self):
        self.states = [("ring", State.RUNNING), ("ingester-0", State.RUNNING)]
        self.prepared = {"ingester-0": False, "ingester-1": False}
        self.shutdowns: list[tuple] = []
        self.levels: list[str] = []
        self.members = {
            "ingester-0": Member("ingester-0", "ingester-0", "n1", (1, 2), "ACTIVE", NOW - S, NOW),
            "ingester-1": Member("ingester-1", "ingester-1", "n2", (3,), "ACTIVE", NOW - 600 * S, NOW),
        }

    async def services(self):
        return self.states

    async def set_log_level(self, level):
        self.levels.append(level)
        return {"ingester-0": "ok"}

    async def prepare_shutdown(self, action, ingester):
        names = [ingester] if ingester else list(self.prepared)
        if ingester and ingester not in self.prepared:
            raise NotFoundError(f"no ingester named {ingester!r}")
        for name in names:
            if action != "get":
                self.prepared[name] = action == "set"
        return {name: self.prepared[name] for name in names}

    async def shutdown(self, ingester, flush, delete_ring_tokens, terminate):
        self.shutdowns.append((ingester, flush, delete_ring_tokens, terminate))
        return {}

    async def ring(self, kind, now_ns):
        if kind == "compactor":
            return RingView(
                (Member("compactor", "compactor", heartbeat_ns=NOW),), 60 * S, forgettable=False, note="no ring here"
            )
        return RingView(tuple(self.members.values()), 60 * S)

    async def forget(self, kind, member_id):
        return self.members.pop(member_id, None) is not None

    def now_ns(self):
        return NOW


@pytest.fixture
def admin():
    return FakeAdmin()


@pytest.fixture
def app(admin):
    return app_with(Services(admin=admin))


def call(app, method, path, **kw) -> httpx.Response:
    async def send():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svclog") as client:
            return await client.request(method, path, **kw)

    return asyncio.run(send())


def test_ready_when_every_component_runs(app, admin):
    resp = call(app, "GET", "/ready")
    assert resp.status_code == 200 and resp.text == "ready\n"
    admin.states = [("ring", State.RUNNING), ("ingester-0", State.STARTING), ("querier-0", State.FAILED)]
    resp = call(app, "GET", "/ready")
    assert resp.status_code == 503
    assert "ingester-0 (Starting)" in resp.text and "querier-0 (Failed)" in resp.text and "ring" not in resp.text


def test_ready_is_503_when_the_probe_itself_fails(app, admin):
    async def broken():
        raise RuntimeError("controller unreachable")

    admin.services = broken
    resp = call(app, "GET", "/ready")
    assert resp.status_code == 503 and "controller unreachable" in resp.text


def test_services_lists_name_and_state(app, admin):
    admin.states = [("ring", State.RUNNING), ("ingester-0", State.STOPPING)]
    assert call(app, "GET", "/services").text == "ring => Running\ningester-0 => Stopping\n"


@pytest.fixture
def restore_level():
    logger = logging.getLogger("svclog")
    before = logger.level
    yield
    logger.setLevel(before)


def test_log_level_get_post_and_validation(app, admin, restore_level):
    resp = call(app, "POST", "/log_level", params={"log_level": "debug"})
    assert resp.status_code == 200 and resp.json()["log_level"] == "debug"
    assert logging.getLogger("svclog").getEffectiveLevel() == logging.DEBUG
    assert resp.json()["components"] == {"ingester-0": "ok"} and admin.levels == ["debug"]
    assert call(app, "GET", "/log_level").json()["log_level"] == "debug"
    resp = call(app, "POST", "/log_level", data={"log_level": "warn"})  # a form value
    assert resp.status_code == 200 and logging.getLogger("svclog").getEffectiveLevel() == logging.WARNING
    assert call(app, "GET", "/log_level").json()["log_level"] == "warn"
    for bad in ({"log_level": "verbose"}, {}):
        resp = call(app, "POST", "/log_level", params=bad)
        assert resp.status_code == 400 and "invalid log level" in resp.text
    assert admin.levels == ["debug", "warn"]
    assert logging.getLogger("svclog").getEffectiveLevel() == logging.WARNING


def test_prepare_shutdown_set_get_unset(app, admin):
    assert call(app, "GET", "/ingester/prepare_shutdown").text == "unset\n"
    resp = call(app, "POST", "/ingester/prepare_shutdown")
    assert resp.status_code == 204 and resp.content == b""
    assert admin.prepared == {"ingester-0": True, "ingester-1": True}
    assert call(app, "GET", "/ingester/prepare_shutdown").text == "set\n"
    assert call(app, "DELETE", "/ingester/prepare_shutdown").status_code == 204
    assert call(app, "GET", "/ingester/prepare_shutdown").text == "unset\n"
    # one ingester
    call(app, "POST", "/ingester/prepare_shutdown", params={"ingester": "ingester-1"})
    assert call(app, "GET", "/ingester/prepare_shutdown", params={"ingester": "ingester-1"}).text == "set\n"
    assert call(app, "GET", "/ingester/prepare_shutdown").text == "unset\n"  # not all of them
    assert call(app, "GET", "/ingester/prepare_shutdown", params={"ingester": "nope"}).status_code == 404


def test_shutdown_parameters_and_defaults(app, admin):
    assert call(app, "POST", "/ingester/shutdown").status_code == 204
    assert (
        call(
            app,
            "GET",
            "/ingester/shutdown",
            params={"flush": "false", "delete_ring_tokens": "true", "terminate": "0", "ingester": "ingester-1"},
        ).status_code
        == 204
    )
    assert admin.shutdowns == [(None, True, False, True), ("ingester-1", False, True, False)]
    resp = call(app, "POST", "/ingester/shutdown", params={"flush": "maybe"})
    assert resp.status_code == 400 and "flush" in resp.text


def test_deprecated_flush_shutdown_flushes_and_keeps_the_process(app, admin):
    assert call(app, "POST", "/ingester/flush_shutdown").status_code == 204
    assert admin.shutdowns == [(None, True, False, False)]


def test_ring_pages_are_html_with_health(app):
    for path in ("/distributor/ring", "/ring", "/ruler/ring", "/indexgateway/ring"):
        resp = call(app, "GET", path)
        assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/html")
        assert '<tr class="unhealthy"><td>ingester-1</td>' in resp.text  # 600 s since its heartbeat
        assert '<tr class="healthy"><td>ingester-0</td>' in resp.text


def test_ring_page_json(app):
    data = call(app, "GET", "/distributor/ring", headers={"Accept": "application/json"}).json()
    assert [m["health"] for m in data["members"]] == ["healthy", "unhealthy"]


def test_forget_from_the_page_removes_the_member(app, admin):
    resp = call(app, "POST", "/distributor/ring", data={"forget": "ingester-1"})
    assert resp.status_code == 303 and resp.headers["location"] == "/distributor/ring"
    assert "ingester-1" not in admin.members
    assert "ingester-1" not in call(app, "GET", "/distributor/ring").text
    assert call(app, "POST", "/distributor/ring", data={}).status_code == 400


def test_ring_less_component_page_has_no_forget_button(app):
    page = call(app, "GET", "/compactor/ring").text
    assert "compactor" in page and 'name="forget"' not in page and "no ring here" in page


@pytest.mark.parametrize(
    "text,default,expected",
    [
        (None, True, True),
        ("", False, False),
        ("true", False, True),
        ("1", False, True),
        ("F", True, False),
    ],
)
def test_parse_bool(text, default, expected):
    assert parse_bool("x", text, default) is expected


# ---------------------------------------------------------------- block_ingestion (handlers.push status)


class BlockedBackend:
    def __init__(self, status, message):
        self.error = IngestionBlocked(message, status)

    async def push(self, *args):
        raise self.error


def _push_app(status, message):
    return app_with(Services(backend=BlockedBackend(status, message)), auth_enabled=False, max_body_bytes=1 << 20)


def test_blocked_ingestion_answers_the_configured_status_with_a_message():
    resp = call(
        _push_app(260, "ingestion blocked until 2030-01-01T00:00:00Z"),
        "POST",
        "/svc/api/v1/push",
        content=b'{"streams":[]}',
        headers={"Content-Type": "application/json"},
    )
    assert resp.status_code == 260 and "ingestion blocked" in resp.text


def test_blocked_ingestion_with_status_200_has_no_message():
    resp = call(
        _push_app(200, ""),
        "POST",
        "/svc/api/v1/push",
        content=b'{"streams":[]}',
        headers={"Content-Type": "application/json"},
    )
    assert resp.status_code == 200 and resp.content == b""
