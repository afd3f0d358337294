"""A push with one bad stream: 400 naming it, the other streams stored and counted, over JSON and protobuf."""

from __future__ import annotations

import asyncio
import json
import time
from types import SimpleNamespace

import httpx
import pytest
import snappy

from svclog.distributor.distributor import AcceptedCounts, Distributor
from svclog.ring.ring import Ring
from svclog.serve import telemetry
from svclog.serve.app import Services
from svclog.serve.codecs import push_pb2
from svclog.serve.codecs.push_columns import decode_push_columns
from tests.fuzz.harness import app_with

NOW = time.time_ns()
LIMITS = SimpleNamespace(
    max_line_size=256 * 1024,
    max_line_size_truncate=False,
    max_label_names_per_series=15,
    max_label_name_length=1024,
    max_label_value_length=2048,
    reject_old_samples=False,
    reject_old_samples_max_age=0,
    creation_grace_period=600 * 10**9,
    allow_structured_metadata=True,
    max_structured_metadata_size=0,
    max_structured_metadata_entries_count=0,
    ingestion_rate_mb=100.0,
    ingestion_burst_size_mb=100.0,
    block_ingestion_until=None,
    ingestion_rate_strategy="global",
    discover_log_levels=False,
)


class StoredPusher:
    def __init__(self):
        self.stored = {}

    def push_many(self, tenant, assignments):
        for streams in assignments.values():
            for s in streams:
                self.stored.setdefault(str(s.labels), []).extend(s.lines)
        return {member: None for member in assignments}


class InProcessBackend:
    """Decode and distribute in this process, as the gateway replica does."""

    def __init__(self):
        ring = Ring()
        ring.register("i0", "i0", node="n0")
        self.pusher = StoredPusher()
        self.accepted = AcceptedCounts()
        self.distributor = Distributor(
            ring=lambda: ring,
            pusher=self.pusher,
            limits_for=lambda t: LIMITS,
            replication_factor=1,
            accepted=self.accepted,
        )

    async def push(self, tenant, body, content_type, content_encoding):
        streams = decode_push_columns(body, content_type, content_encoding, max_decompressed_bytes=1 << 24)
        return self.distributor.push(tenant, streams)


def _protobuf(streams) -> bytes:
    request = push_pb2.PushRequest()
    for labels, line in streams:
        stream = request.streams.add(labels=labels.encode())
        entry = stream.entries.add(line=line.encode())
        entry.timestamp.seconds, entry.timestamp.nanos = divmod(NOW, 10**9)
    return snappy.compress(request.SerializeToString())


def _json(streams) -> bytes:
    return json.dumps(
        {"streams": [{"stream": labels, "values": [[str(NOW), line]]} for labels, line in streams]}
    ).encode()


def _post(backend, body, content_type) -> httpx.Response:
    app = app_with(Services(backend=backend), auth_enabled=False, max_body_bytes=1 << 24)

    async def send():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svclog") as client:
            return await client.post("/svc/api/v1/push", content=body, headers={"Content-Type": content_type})

    return asyncio.run(send())


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ('{a="1",a="2"}', "duplicate label name: 'a'"),
        ('{a="1"', "Error parsing labels '{a=\"1\"'"),
        ('{1a="x"}', "Error parsing labels"),
    ],
)
def test_protobuf_bad_stream_is_refused_alone(bad, message):
    backend = InProcessBackend()
    resp = _post(backend, _protobuf([(bad, "bad line"), ('{app="goodp"}', "good line")]), "application/x-protobuf")
    assert resp.status_code == 400 and message in resp.text
    assert backend.pusher.stored == {'{app="goodp"}': ["good line"]}


def test_json_bad_stream_is_refused_alone_the_same_way():
    backend = InProcessBackend()
    resp = _post(backend, _json([({"1a": "x"}, "bad line"), ({"app": "goodj"}, "good line")]), "application/json")
    assert resp.status_code == 400 and "invalid label name '1a'" in resp.text
    assert backend.pusher.stored == {'{app="goodj"}': ["good line"]}


def test_partly_accepted_push_counts_what_was_stored():
    backend = InProcessBackend()
    body = _protobuf([('{a="1",a="2"}', "bad line"), ('{app="goodp"}', "good line")])
    assert _post(backend, body, "application/x-protobuf").status_code == 400
    assert _post(backend, _json([({"app": "goodj"}, "12345")]), "application/json").status_code == 204
    assert backend.accepted.snapshot() == {"fake": (2, len("good line") + 5)}


def test_received_metrics_read_the_distributor_counts():
    backend = InProcessBackend()
    backend.distributor.accepted = telemetry.ACCEPTED
    before = telemetry.ACCEPTED.snapshot().get("fake", (0, 0))
    _post(backend, _protobuf([('{a="1",a="2"}', "bad"), ('{app="goodp"}', "good line")]), "application/x-protobuf")
    text = telemetry.render([{"flush_queue": 3}, {"flush_queue": 2}])[0].decode()
    assert f'svc_distributor_lines_received_total{{tenant="fake"}} {float(before[0] + 1)}' in text
    assert "svc_ingester_flush_queue_length 5.0" in text
