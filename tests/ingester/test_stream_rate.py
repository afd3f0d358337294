"""Per-stream rate limit (per_stream_rate_limit / _burst) in the ingester."""

from __future__ import annotations

import pytest

from svclog.config import load_config
from svclog.ingester import stream_rate
from svclog.ingester.ingester import Ingester, IngesterSettings
from svclog.ingester.stream_rate import StreamRateLimitError, base2_bytes
from svclog.model import Labels, StreamColumns

LABELS = Labels({"app": "a"}.items())


class Writer:
    def put_chunks(self, tenant, chunks, writer_id):
        return []


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(stream_rate.time, "monotonic", clock)
    return clock


def _ingester(tmp_path, rate, burst, wal=False):
    return Ingester(
        IngesterSettings("ing-0", str(tmp_path / "wal"), wal_enabled=wal),
        Writer(),
        stream_rate=lambda tenant: (rate, burst),
    )


def _push(n, size=100, labels=LABELS, start=0):
    return StreamColumns(labels, list(range(start, start + n)), ["x" * size] * n)


def _lines(ing, labels=LABELS):
    stream = ing.tenants["t"].streams.get(labels)
    return len(stream.head) + sum(c.table.num_rows for c in stream.sealed) if stream else 0


def test_within_rate_and_burst_everything_is_taken(tmp_path, clock):
    ing = _ingester(tmp_path, rate=1000, burst=5000)
    ing.push("t", [_push(50)])  # exactly the burst
    clock.now += 1
    ing.push("t", [_push(10, start=50)])  # one second refilled 1000 bytes
    assert _lines(ing) == 60


def test_over_the_limit_keeps_what_fits_and_answers_429(tmp_path, clock):
    ing = _ingester(tmp_path, rate=1024, burst=2048)
    other = Labels({"app": "other"}.items())
    with pytest.raises(StreamRateLimitError) as err:
        ing.push("t", [_push(30, size=100), _push(3, labels=other)])
    assert err.value.status == 429
    assert str(err.value) == (
        "Per stream rate limit exceeded (limit: 1KiB/sec) while attempting to ingest for stream "
        "'{app=\"a\"}' totaling 1000B, consider splitting a stream via additional labels or contact your "
        "Loki administrator to see if the limit can be increased"
    )
    assert _lines(ing) == 20 and _lines(ing, other) == 3  # 2000 of 3000 bytes fit the burst; other streams pass


def test_refused_entries_are_not_in_the_wal(tmp_path, clock):
    ing = _ingester(tmp_path, rate=1000, burst=1000, wal=True)
    with pytest.raises(StreamRateLimitError):
        ing.push("t", [_push(15)])
    ing.close()
    replayed = _ingester(tmp_path, rate=0, burst=0, wal=True)
    assert _lines(replayed) == 10


def test_zero_rate_disables_the_limit(tmp_path, clock):
    ing = _ingester(tmp_path, rate=0, burst=0)
    ing.push("t", [_push(10_000)])
    assert _lines(ing) == 10_000


def test_conformance_limits_do_not_throttle_the_benchmark(tmp_path, clock):
    """1M lines over 100 streams at ~40 MB/s: 0.4 MB/s and 10k lines per stream in all."""
    cfg = load_config("examples/conformance.yaml")
    limits = cfg.limits_config
    assert limits.per_stream_rate_limit >= 500e6 and limits.per_stream_rate_limit_burst >= 1e9
    ing = _ingester(tmp_path, float(limits.per_stream_rate_limit), float(limits.per_stream_rate_limit_burst))
    streams = [Labels({"app": "bench", "pod": str(i)}.items()) for i in range(100)]
    for second in range(5):  # 5 s of pushes: 1000-line batches of 400-byte lines, 40 MB/s in all
        ing.push("t", [_push(400, size=400, labels=labels, start=second * 400) for labels in streams])
        clock.now += 1
    assert sum(_lines(ing, labels) for labels in streams) == 5 * 100 * 400


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0B"),
        (1000, "1000B"),
        (1024, "1KiB"),
        (1234, "1KiB210B"),
        (3 * 2**20, "3MiB"),
        (512 * 2**20, "512MiB"),
        (2**30 + 1, "1GiB1B"),
    ],
)
def test_sizes_print_like_the_reference(n, text):
    assert base2_bytes(n) == text
