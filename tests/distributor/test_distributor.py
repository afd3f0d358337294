import time
from types import SimpleNamespace

import pytest

from svclog.distributor.distributor import Distributor, IngestionBlocked, QuorumError
from svclog.model import Entry, Labels, PushStream, RateLimitError, ValidationError
from svclog.ring.ring import Ring

NOW = time.time_ns()


def _limits(**overrides):
    base = dict(
        max_line_size=256 * 1024,
        max_line_size_truncate=False,
        max_label_names_per_series=15,
        max_label_name_length=1024,
        max_label_value_length=2048,
        reject_old_samples=False,
        reject_old_samples_max_age=7 * 86400 * 10**9,
        creation_grace_period=600 * 10**9,
        allow_structured_metadata=True,
        max_structured_metadata_size=64 * 1024,
        max_structured_metadata_entries_count=128,
        ingestion_rate_mb=4.0,
        ingestion_burst_size_mb=6.0,
        block_ingestion_until=None,
        block_ingestion_status_code=260,
        ingestion_rate_strategy="global",
        discover_log_levels=False,
    )
    base.update(overrides)
    return SimpleNamespace(**base)


class RecordingPusher:
    def __init__(self, failing=()):
        self.failing = set(failing)
        self.received: dict[str, list] = {}

    def push_many(self, tenant, assignments):
        out = {}
        for member, streams in assignments.items():
            if member in self.failing:
                out[member] = OSError("down")
            else:
                self.received.setdefault(member, []).extend(streams)
                out[member] = None
        return out


def _ring(n):
    ring = Ring()
    for i in range(n):
        ring.register(f"i{i}", f"i{i}", node=f"n{i}")
    return ring


def _distributor(ring, pusher, rf, **limits):
    return Distributor(ring=lambda: ring, pusher=pusher, limits_for=lambda t: _limits(**limits), replication_factor=rf)


def _stream(app, n=2):
    return PushStream(Labels({"app": app}.items()), [Entry(NOW + i, f"line {i}") for i in range(n)])


def test_every_stream_reaches_rf_replicas():
    pusher = RecordingPusher()
    dist = _distributor(_ring(3), pusher, rf=3)
    outcome = dist.push("t", [_stream("a"), _stream("b")])
    assert outcome.lines == 4
    assert sorted(pusher.received) == ["i0", "i1", "i2"]
    assert all(len(v) == 2 for v in pusher.received.values())


def test_quorum_tolerates_one_failure_of_three_but_not_two():
    dist = _distributor(_ring(3), RecordingPusher(failing={"i0"}), rf=3)
    dist.push("t", [_stream("a")])
    dist = _distributor(_ring(3), RecordingPusher(failing={"i0", "i1"}), rf=3)
    with pytest.raises(QuorumError):
        dist.push("t", [_stream("a")])


def test_bad_stream_is_reported_and_good_one_still_written():
    pusher = RecordingPusher()
    dist = _distributor(_ring(1), pusher, rf=1)
    bad = PushStream(Labels({"app": "x" * 3000}.items()), [Entry(NOW, "too long label")])
    with pytest.raises(ValidationError):
        dist.push("t", [_stream("good"), bad])
    written = [s.labels.get("app") for s in pusher.received["i0"]]
    assert written == ["good"]


def test_rate_limit_gives_429():
    dist = _distributor(_ring(1), RecordingPusher(), rf=1, ingestion_rate_mb=0.000001, ingestion_burst_size_mb=0.00001)
    big = PushStream(Labels({"app": "a"}.items()), [Entry(NOW, "x" * 1000)])
    with pytest.raises(RateLimitError) as err:
        dist.push("t", [big])
    assert err.value.status == 429 and "Ingestion rate limit exceeded" in str(err.value)


def test_block_ingestion_until_uses_configured_status():
    future = str(NOW // 10**9 + 10**9)
    dist = _distributor(_ring(1), RecordingPusher(), rf=1, block_ingestion_until=future)
    with pytest.raises(IngestionBlocked) as err:
        dist.push("t", [_stream("a")])
    assert err.value.status == 260 and "blocked" in str(err.value)


def test_prepare_then_complete_is_push_for_a_host_that_calls_the_ingesters_itself():
    """An event-loop host sends `assignments` its own way and hands the answers to `complete`."""
    pusher = RecordingPusher()
    dist = _distributor(_ring(3), pusher, rf=3)
    bad = PushStream(Labels({"app": "x" * 3000}.items()), [Entry(NOW, "too long label")])
    prepared = dist.prepare("t", [_stream("a"), bad])
    assert sorted(prepared.assignments) == ["i0", "i1", "i2"] and not pusher.received
    with pytest.raises(ValidationError):  # the valid part is acknowledged, the refused part named
        dist.complete(prepared, pusher.push_many("t", prepared.assignments))
    assert all(len(v) == 1 for v in pusher.received.values())
    prepared = dist.prepare("t", [_stream("b")])
    with pytest.raises(QuorumError):
        dist.complete(prepared, {"i0": OSError("down"), "i1": OSError("down"), "i2": None})
