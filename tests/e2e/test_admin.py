"""Admin endpoints against the live topology. Shutdown paths run on extra ingester actors this
module creates and removes itself; the shared ingesters only see terminate-free calls."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import time

import httpx
import pytest

pytestmark = pytest.mark.ray


def _wait(predicate, timeout=60.0, step=0.25):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return False


def _ring_ids():
    import ray

    from svclog.actors.options import RING_NAME
    from svclog.actors.registry import named_actor

    ring = named_actor(RING_NAME)
    return {m.id for m in ray.get(ring.snapshot.remote(), timeout=30)["members"]}


@pytest.fixture
def extra_ingester(svc, tmp_path):
    """A fresh ingester actor (not restarted by Ray) with a token file; removed from the ring afterwards."""
    import ray

    from svclog.actors.ingester_actor import RemoteIngester
    from svclog.actors.options import NAMESPACE, RING_NAME
    from svclog.actors.registry import named_actor

    created = []

    def make(name):
        lc = dataclasses.replace(svc.cfg.ingester.lifecycler, tokens_file_path=str(tmp_path / "tokens"))
        cfg = dataclasses.replace(svc.cfg, ingester=dataclasses.replace(svc.cfg.ingester, lifecycler=lc))
        actor = RemoteIngester.options(
            name=name, namespace=NAMESPACE, num_cpus=0.01, max_restarts=0, max_concurrency=4
        ).remote(cfg, name)
        ray.get(actor.ready.remote(), timeout=120)
        created.append((name, actor))
        return actor

    yield make
    ring = named_actor(RING_NAME)
    for name, actor in created:
        ray.get(ring.forget.remote(name), timeout=30)
        with contextlib.suppress(Exception):  # already gone
            ray.kill(actor, no_restart=True)
    time.sleep(2.5)  # let cached ring snapshots (1 s TTL) drop the removed members


def test_ready_and_services_report_every_component(svc):
    resp = httpx.get(svc.url + "/ready", timeout=30)
    assert resp.status_code == 200 and resp.text == "ready\n"
    lines = httpx.get(svc.url + "/services", timeout=30).text.splitlines()
    states = dict(line.split(" => ") for line in lines)
    for name in (
        "ring",
        "ingester-0",
        "ingester-1",
        "querier-0",
        "compactor",
        "ruler-0",
        "distributor",
        "query-frontend",
        "gateway",
    ):
        assert states.get(name) == "Running", lines


def test_log_level_starts_at_the_configured_level_everywhere(svc):
    from svclog.serve.runtime import shared_log_level

    configured = svc.cfg.server.log_level
    assert httpx.get(svc.url + "/log_level").json()["log_level"] == configured  # not Serve's WARNING
    assert shared_log_level() == configured  # what every replica follows


def test_log_level_changes_at_runtime_and_reaches_the_actors(svc):
    from svclog.serve.runtime import shared_log_level

    before = httpx.get(svc.url + "/log_level").json()["log_level"]
    try:
        resp = httpx.post(svc.url + "/log_level", data={"log_level": "debug"}, timeout=60)
        assert resp.status_code == 200, resp.text
        components = resp.json()["components"]
        assert components["ingester-0"] == "ok" and components["ring"] == "ok" and components["querier-0"] == "ok"
        assert httpx.get(svc.url + "/log_level").json()["log_level"] == "debug"
        assert shared_log_level() == "debug"  # every replica of every deployment picks it up from here
        bad = httpx.post(svc.url + "/log_level", params={"log_level": "loud"})
        assert bad.status_code == 400 and "invalid log level" in bad.text
    finally:
        httpx.post(svc.url + "/log_level", params={"log_level": before}, timeout=60)


def test_config_modes_and_yaml_media_type(svc):
    assert "server:" in httpx.get(svc.url + "/config").text
    diffs = httpx.get(svc.url + "/config", params={"mode": "diffs"})
    assert diffs.status_code == 200 and "path_prefix" in diffs.text
    defaults = httpx.get(svc.url + "/config", params={"mode": "defaults"}, headers={"Accept": "application/yaml"})
    assert defaults.headers["content-type"].startswith("application/yaml") and "server:" in defaults.text
    assert httpx.get(svc.url + "/config", params={"mode": "nope"}).status_code == 400


# members each page must list (the ruler's and compactor's: at least one, whatever their names); the
# index gateway's ring is empty under `-target=all` (tests/e2e/test_index_gateway.py starts one)
RING_MEMBERS = {
    "/distributor/ring": {"ingester-0", "ingester-1"},
    "/ruler/ring": set(),
    "/compactor/ring": {"compactor"},
}


def _member_rows(html: str) -> dict[str, tuple[str, str, str]]:
    """Instance ID -> (row class, State cell, Health cell) of a ring page's table."""
    import re

    rows = {}
    for cls, cells in re.findall(r'<tr class="([^"]*)">(.*?)</tr>', html, flags=re.S):
        values = re.findall(r"<td>(.*?)</td>", cells, flags=re.S)
        rows[values[0]] = (cls, values[3], values[4])
    return rows


def test_ring_pages(svc):
    for path, expected in RING_MEMBERS.items():
        resp = httpx.get(svc.url + path, timeout=30)
        assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/html"), path
        rows = _member_rows(resp.text)
        assert rows and expected <= set(rows), (path, rows)
        for name in expected or rows:  # Active and healthy, in the row's class and in its cells
            assert rows[name] == ("healthy", "ACTIVE", "healthy"), (path, name, rows)
        members = httpx.get(svc.url + path, timeout=30, headers={"Accept": "application/json"}).json()["members"]
        states = {m["id"]: (m["state"], m["health"]) for m in members}
        assert all(states[name] == ("ACTIVE", "healthy") for name in expected or rows), (path, states)
    page = httpx.get(svc.url + "/distributor/ring").text
    assert 'name="forget"' in page


def test_forget_from_the_ring_page(svc):
    import ray

    from svclog.actors.options import RING_NAME
    from svclog.actors.registry import named_actor

    ring = named_actor(RING_NAME)
    ray.get(ring.register.remote("ghost-ingester", "ghost-ingester", "nowhere", 4), timeout=30)
    try:
        assert "ghost-ingester" in httpx.get(svc.url + "/distributor/ring").text
        resp = httpx.post(svc.url + "/distributor/ring", data={"forget": "ghost-ingester"}, follow_redirects=True)
        assert resp.status_code == 200 and "ghost-ingester" not in resp.text
        assert "ghost-ingester" not in _ring_ids()
    finally:
        ray.get(ring.forget.remote("ghost-ingester"), timeout=30)
        time.sleep(2.5)


def test_prepare_shutdown_round_trip_on_the_shared_ingesters(svc):
    url = svc.url + "/ingester/prepare_shutdown"
    try:
        assert httpx.get(url).text == "unset\n"
        assert httpx.post(url).status_code == 204
        assert httpx.get(url).text == "set\n"
        assert httpx.get(url, params={"ingester": "ingester-1"}).text == "set\n"
    finally:
        assert httpx.delete(url).status_code == 204
    assert httpx.get(url).text == "unset\n"
    assert httpx.get(url, params={"ingester": "no-such-ingester"}).status_code == 404


def _push_to(actor, tenant, app, n):
    import ray

    from svclog.model import Labels, StreamColumns

    now = time.time_ns()
    ray.get(
        actor.push.remote(
            tenant,
            [
                StreamColumns(
                    Labels({"app": app}.items()), [now + i for i in range(n)], [f"{app} {i}" for i in range(n)], None
                )
            ],
        ),
        timeout=60,
    )
    return now


def test_shutdown_flushes_leaves_the_ring_deletes_tokens_then_terminates(svc, extra_ingester, tmp_path):
    import ray

    name = "ingester-admin-x"
    actor = extra_ingester(name)
    token_file = tmp_path / f"tokens.{name}"
    assert token_file.exists() and name in _ring_ids()
    _push_to(actor, "admin-e2e", "x", 20)
    assert httpx.post(svc.url + "/ingester/prepare_shutdown", params={"ingester": name}).status_code == 204

    resp = httpx.post(
        svc.url + "/ingester/shutdown",
        timeout=300,
        params={"ingester": name, "flush": "true", "delete_ring_tokens": "true", "terminate": "false"},
    )
    assert resp.status_code == 204, resp.text
    assert name not in _ring_ids() and not token_file.exists()
    stats = ray.get(actor.stats.remote(), timeout=30)
    assert stats["flush_queue"] == 0 and stats["flushed_chunks"] >= 1  # flushed (then retained a while)
    assert ray.get(actor.service_state.remote(), timeout=30) == "Terminated"
    assert ray.get(actor.prepare_shutdown.remote("get"), timeout=30) is False  # cleared once done
    assert name not in httpx.get(svc.url + "/services", timeout=30).text

    resp = httpx.post(svc.url + "/ingester/shutdown", params={"ingester": name}, timeout=60)  # terminate=true
    assert resp.status_code == 204, resp.text
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(actor.pid.remote(), timeout=30)
    time.sleep(2.5)
    assert httpx.get(svc.url + "/ready", timeout=30).status_code == 200


def test_sigterm_with_prepare_shutdown_leaves_the_ring_and_flushes(svc, extra_ingester):
    import ray

    name = "ingester-admin-y"
    actor = extra_ingester(name)
    start = _push_to(actor, "admin-sig", "sig", 30)
    assert httpx.post(svc.url + "/ingester/prepare_shutdown", params={"ingester": name}).status_code == 204
    os.kill(ray.get(actor.pid.remote(), timeout=30), signal.SIGTERM)
    assert _wait(lambda: name not in _ring_ids(), timeout=60)

    def dead():
        try:
            ray.get(actor.pid.remote(), timeout=5)
            return False
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            return True

    assert _wait(dead, timeout=60)
    time.sleep(2.5)  # ring snapshots drop the member
    resp = httpx.get(
        svc.url + "/svc/api/v1/query_range",
        timeout=60,
        headers={"X-Scope-OrgID": "admin-sig"},
        params={"query": '{app="sig"}', "start": str(start - 10**9), "end": str(start + 10**10), "limit": "1000"},
    )
    assert resp.status_code == 200, resp.text
    lines = [v[1] for s in resp.json()["data"]["result"] for v in s["values"]]
    assert len(lines) == 30  # flushed to the store before the process exited


def _lines_of(svc, tenant, app, start):
    resp = httpx.get(
        svc.url + "/svc/api/v1/query_range",
        timeout=60,
        headers={"X-Scope-OrgID": tenant},
        params={"query": f'{{app="{app}"}}', "start": str(start - 10**9), "end": str(start + 10**10), "limit": "1000"},
    )
    assert resp.status_code == 200, resp.text
    return [v[1] for s in resp.json()["data"]["result"] for v in s["values"]]


def test_clean_stop_flushes_and_leaves_the_ring_before_killing(svc, extra_ingester):
    """launch.stop's ingester step (what `svclog serve` runs on SIGTERM/SIGINT)."""
    import ray

    from svclog import launch

    prepared, plain = extra_ingester("ingester-stop-a"), extra_ingester("ingester-stop-b")
    start_a = _push_to(prepared, "admin-stop", "stop-a", 25)
    start_b = _push_to(plain, "admin-stop", "stop-b", 15)
    ray.get(prepared.prepare_shutdown.remote("set"), timeout=30)
    wal = dataclasses.replace(svc.cfg.ingester.wal, flush_on_shutdown=True)
    cfg = dataclasses.replace(svc.cfg, ingester=dataclasses.replace(svc.cfg.ingester, wal=wal))

    launch.stop_ingesters([prepared, plain], cfg, timeout_s=120)
    assert not {"ingester-stop-a", "ingester-stop-b"} & _ring_ids()
    for actor in (prepared, plain):
        _wait_dead(actor)
    time.sleep(2.5)  # ring snapshots drop the members
    assert len(_lines_of(svc, "admin-stop", "stop-a", start_a)) == 25  # flushed: prepare-shutdown was set
    assert len(_lines_of(svc, "admin-stop", "stop-b", start_b)) == 15  # flushed: flush_on_shutdown


def _wait_dead(actor, within_s: float = 15.0) -> None:
    """ray.kill only asks for the kill: a call made at once may still be answered (seen under load)."""
    import ray

    deadline = time.monotonic() + within_s
    while True:
        try:
            ray.get(actor.pid.remote(), timeout=30)
        except ray.exceptions.RayActorError:
            return
        assert time.monotonic() < deadline, "the ingester still answers after its stop"
        time.sleep(0.2)


def test_flush_and_admin_calls_name_an_ingester_that_is_down(svc, extra_ingester):
    import ray

    name = "ingester-down-z"
    actor = extra_ingester(name)
    ray.kill(actor, no_restart=True)  # still a member of the ring until its heartbeat times out
    for method, path in (("POST", "/flush"), ("GET", "/ingester/prepare_shutdown")):
        resp = httpx.request(method, svc.url + path, timeout=120)
        assert resp.status_code == 503 and f"ingester {name} is unavailable" in resp.text, (path, resp.text)
