"""End to end: an alert rule fires to a real HTTP receiver (Alertmanager v2 path), a recording
rule's samples arrive by remote write, with the rule groups shared by two rulers; a delete request
hides lines within DELETES_TTL_S, and compaction plus the sweep remove them from every chunk object in the store."""

from __future__ import annotations

import json
import time

import httpx
import pytest
import snappy

from svclog.chunk.format import decode_chunk
from svclog.compactor.delete_filter import DELETES_TTL_S
from svclog.config import object_store_uri
from svclog.ruler import remote_write_pb2
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import IndexReader
from svclog.storage.objstore import ObjectStore

pytestmark = pytest.mark.ray
NS = 10**9

RULES = """
name: e2e-group
interval: 1s
rules:
  - alert: RulerE2EErrors
    expr: sum(count_over_time({app="ruler-e2e"} |= "error" [5m])) > 0
    for: 0s
    labels:
      severity: page
    annotations:
      summary: "{{ $value }} errors"
  - record: ruler_e2e:lines:count5m
    expr: sum(count_over_time({app="ruler-e2e"}[5m]))
"""


def _push(svc, tenant, app, lines, start_ns):
    values = [[str(start_ns + i), line] for i, line in enumerate(lines)]
    resp = httpx.post(
        svc.url + "/svc/api/v1/push",
        timeout=30,
        headers={"X-Scope-OrgID": tenant, "Content-Type": "application/json"},
        content=json.dumps({"streams": [{"stream": {"app": app}, "values": values}]}),
    )
    assert resp.status_code == 204, resp.text


def _wait(predicate, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.5)
    return None


def test_alert_reaches_alertmanager_and_recording_rule_is_remote_written(svc, receiver):
    tenant = "ruler-e2e"
    hdr = {"X-Scope-OrgID": tenant, "Content-Type": "application/yaml"}
    resp = httpx.post(svc.url + "/svc/api/v1/rules/e2e", content=RULES, headers=hdr, timeout=30)
    assert resp.status_code == 202, resp.text
    _push(svc, tenant, "ruler-e2e", ["an error happened", "fine", "another error"], time.time_ns() - 5 * NS)

    def alert_posted():
        for path, _, body in receiver.posted("/alertmanager"):
            assert path == "/alertmanager/api/v2/alerts", path  # the Alertmanager v2 API under the URL
            for alert in json.loads(body):
                if alert["labels"].get("alertname") == "RulerE2EErrors":
                    return alert
        return None

    alert = _wait(alert_posted, 60)
    assert alert is not None, "no alert reached the receiver"
    assert alert["labels"]["severity"] == "page"
    assert alert["annotations"]["summary"] == "2 errors"

    def sample_written():
        for _, _headers, body in receiver.posted("/api/v1/write"):
            request = remote_write_pb2.WriteRequest()
            request.ParseFromString(snappy.uncompress(body))
            for series in request.timeseries:
                names = {label.name: label.value for label in series.labels}
                if names.get("__name__") == "ruler_e2e:lines:count5m" and series.samples:
                    return series
        return None

    series = _wait(sample_written, 60)
    assert series is not None, "no recording-rule sample reached the remote-write receiver"
    assert series.samples[-1].value == 3.0
    groups = httpx.get(svc.url + "/compat/api/v1/rules", headers=hdr, timeout=30).json()["data"]["groups"]
    assert [g["name"] for g in groups] == ["e2e-group"]  # merged over the rulers: listed once
    alerts = httpx.get(svc.url + "/prometheus/api/v1/alerts", headers=hdr, timeout=30).json()["data"]["alerts"]
    assert [a["labels"]["alertname"] for a in alerts] == ["RulerE2EErrors"]
    assert httpx.delete(svc.url + "/svc/api/v1/rules/e2e", headers=hdr, timeout=30).status_code == 202


def test_rulers_share_a_ring_and_long_names_are_stored(svc):
    rulers = [f"ruler-{i}" for i in range(svc.cfg.ray.num_rulers)]
    ring = httpx.get(svc.url + "/ruler/ring", headers={"Accept": "application/json"}, timeout=30).json()
    assert ring["forgettable"] and {m["id"]: m["health"] for m in ring["members"]} == dict.fromkeys(rulers, "healthy")
    assert all(m["tokens"] > 0 for m in ring["members"])
    hdr = {"X-Scope-OrgID": "ruler-long", "Content-Type": "application/yaml"}
    namespace, group = "n" * 200, "g" * 300
    body = RULES.replace("name: e2e-group", f"name: {group}")
    resp = httpx.post(f"{svc.url}/svc/api/v1/rules/{namespace}", content=body, headers=hdr, timeout=30)
    assert resp.status_code == 202, resp.text
    resp = httpx.get(f"{svc.url}/svc/api/v1/rules/{namespace}/{group}", headers=hdr, timeout=30)
    assert resp.status_code == 200 and group in resp.text
    resp = httpx.post(f"{svc.url}/svc/api/v1/rules/{'x' * 1100}", content=RULES, headers=hdr, timeout=30)
    assert resp.status_code == 400 and "limit: 1024 bytes" in resp.text
    assert httpx.delete(f"{svc.url}/svc/api/v1/rules/{namespace}", headers=hdr, timeout=30).status_code == 202


def _stored_lines(svc, tenant: str) -> list[str]:
    store = ObjectStore(object_store_uri(svc.cfg))
    chunks = ChunkStore(store)
    lines = []
    for refs in IndexReader(store).chunk_refs(tenant, (), 0, 2**62).values():
        for ref in refs:
            lines += chunks.fetch(ref, 0, 2**62).column("line").to_pylist()
    return lines


def _chunk_objects(svc, tenant: str) -> dict[str, list[str]]:
    """Every chunk object of the tenant in the store, referenced by the index or not: key -> lines."""
    store = ObjectStore(object_store_uri(svc.cfg))
    found = {}
    for key in store.list(f"chunks/{tenant}", recursive=True):
        try:
            found[key] = decode_chunk(store.get(key)).line.to_pylist()
        except FileNotFoundError:
            continue  # swept meanwhile
    return found


def test_delete_hides_lines_within_the_ttl_and_compaction_removes_them(svc):
    tenant = "del-e2e"
    hdr = {"X-Scope-OrgID": tenant}
    start = time.time_ns() - 600 * NS
    _push(svc, tenant, "ghost", [f"{'boom' if i % 2 else 'keep'} {i}" for i in range(100)], start)
    assert httpx.post(svc.url + "/flush", timeout=60).status_code == 204

    def lines():
        resp = httpx.get(
            svc.url + "/svc/api/v1/query_range",
            headers=hdr,
            timeout=30,
            params={"query": '{app="ghost"}', "start": str(start - NS), "end": str(time.time_ns()), "limit": "1000"},
        )
        assert resp.status_code == 200, resp.text
        return [v[1] for s in resp.json()["data"]["result"] for v in s["values"]]

    assert len(lines()) == 100
    before = _chunk_objects(svc, tenant)
    assert sum(line.startswith("boom") for chunk in before.values() for line in chunk) == 50
    resp = httpx.post(
        svc.url + "/svc/api/v1/delete",
        headers=hdr,
        timeout=30,
        params={"query": '{app="ghost"} |= "boom"', "start": str((start - NS) // NS)},
    )
    assert resp.status_code == 204, resp.text
    # queriers re-list a tenant's delete requests every DELETES_TTL_S (the reference: every 5 minutes)
    visible = _wait(lambda: v if len(v := lines()) == 50 else None, DELETES_TTL_S + 10)
    assert visible and not any(line.startswith("boom") for line in visible), visible

    def processed():
        listing = httpx.get(svc.url + "/svc/api/v1/delete", headers=hdr, timeout=30).json()
        return all(r["status"] == "processed" for r in listing) and listing

    assert _wait(processed, 90), "the delete request was not processed by the compactor"
    stored = _wait(lambda: (s := _stored_lines(svc, tenant)) and not any(x.startswith("boom") for x in s) and s, 60)
    assert stored, f"deleted lines still in the object store: {_stored_lines(svc, tenant)[:5]}"
    assert sorted(stored) == sorted(f"keep {i}" for i in range(0, 100, 2))

    def swept():  # after retention_delete_delay the sweep deletes the old objects themselves
        objects = _chunk_objects(svc, tenant)
        return objects if not set(objects) & set(before) else None

    after = _wait(swept, 60)
    assert after is not None, (
        f"old chunk objects still in the store: {sorted(set(_chunk_objects(svc, tenant)) & set(before))}"
    )
    raw = [line for chunk in after.values() for line in chunk]
    boom = sum(line.startswith("boom") for line in raw)
    print(
        f"\ndelete e2e: visible before=100 after={len(visible)}; indexed after compaction={len(stored)}; "
        f"chunk objects before={len(before)} after={len(after)} (old ones left: 0); "
        f"raw lines after={len(raw)} (boom={boom}, keep={sum(x.startswith('keep') for x in raw)})"
    )
    assert boom == 0 and sorted(set(raw)) == sorted(f"keep {i}" for i in range(0, 100, 2))
