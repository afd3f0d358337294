"""An ingester's flushed chunks, kept for the retain period, skip the blocks their token index rules
out: a needle's select reads a few blocks and answers exactly what filtering every line gives."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from svclog.chunk.pushdown import apply_line_filters
from svclog.ingester.ingester import Ingester, IngesterSettings
from svclog.logql.parser import parse
from svclog.model import Labels, Matcher, MatchType, StreamColumns
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.objstore import ObjectStore

ANY = (Matcher("app", MatchType.RE, ".+"),)
WORDS = ["GET", "POST", "timeout", "connection-reset-by-peer-upstream", "user_profile_service_v2"]


def _ingester(tmp_path) -> Ingester:
    store = ChunkStore(ObjectStore(str(tmp_path / "store")), block_bytes=2048)
    # packed blocks split as the store's: the flushed chunk's token index then describes them
    settings = IngesterSettings("ing-0", str(tmp_path / "wal"), wal_enabled=False, chunk_block_size=2048)
    return Ingester(settings, store)


def _fill(ing: Ingester, rng: random.Random, flushes: int) -> dict[str, list[tuple[int, str]]]:
    """Lines for three streams, flushed in `flushes` rounds (each flush seals and writes every head)."""
    written: dict[str, list[tuple[int, str]]] = {}
    ts = 0
    for _ in range(flushes):
        for app in ("api", "web", "db"):
            rows = []
            for _ in range(rng.randrange(50, 400)):
                ts += rng.choice((0, 1, 7))  # shared timestamps too, also across block edges
                rows.append((ts, f"{rng.choice(WORDS)} trace_id={rng.getrandbits(128):032x} n={ts}"))
            ing.push("t", [StreamColumns(Labels({"app": app}.items()), [r[0] for r in rows], [r[1] for r in rows])])
            written.setdefault(app, []).extend(rows)
        ing.flush(force=True)
    return written


def _select(ing: Ingester, filters: tuple, start: int, end: int) -> dict[str, list[tuple[int, str]]]:
    got = {}
    for labels, table in ing.select("t", ANY, start, end, None, filters):
        got[dict(labels.items)["app"]] = sorted(zip(table.column("ts").to_pylist(), table.column("line").to_pylist()))
    return got


def _expected(written, filters: tuple, start: int, end: int) -> dict[str, list[tuple[int, str]]]:
    out = {}
    for app, rows in written.items():
        inside = [r for r in rows if start <= r[0] < end]
        table = pa.table({"ts": [r[0] for r in inside], "line": [r[1] for r in inside]})
        kept = apply_line_filters(table, filters)
        if kept.num_rows:
            out[app] = sorted(zip(kept.column("ts").to_pylist(), kept.column("line").to_pylist()))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_retained_chunks_answer_needles_as_filtering_every_line(tmp_path, seed):
    rng = random.Random(seed)
    ing = _ingester(tmp_path)
    written = _fill(ing, rng, rng.randrange(1, 4))
    chunks = [c for inst in ing.tenants.values() for s in inst.streams.values() for c, _ in s.retained]
    assert chunks and all(c.layout is not None and c.layout.index is not None for c in chunks)
    every = [line for rows in written.values() for _, line in rows]
    last = max(ts for rows in written.values() for ts, _ in rows)
    for _ in range(25):
        line = rng.choice(every)
        trace = line.split("trace_id=")[1][:32]
        cut = rng.randrange(0, 17)
        needle = rng.choice(
            [
                f'|= "{trace}"',
                f'|= "{trace[cut : cut + 16]}"',
                f'|= "{rng.getrandbits(128):032x}"',
                f'|= "{trace}" or "{rng.getrandbits(128):032x}"',
                f'|~ "{trace[:20]}.*n="',
                '|= "GET"',
                '!= "connection-reset-by-peer-upstream"',
                '|= "user_profile_service_v2"',
            ]
        )
        filters = tuple(parse('{app=~".+"} ' + needle).stages)
        start = rng.randrange(0, last + 1)
        end = rng.choice((start + rng.randrange(1, 200), last + 1))
        for _ in range(2):  # the second select reuses the chunks' remembered lookups
            assert _select(ing, filters, start, end) == _expected(written, filters, start, end), (needle, start, end)


def test_a_needle_reads_few_of_the_retained_lines(tmp_path):
    rng = random.Random(5)
    ing = _ingester(tmp_path)
    written = _fill(ing, rng, 3)
    total = sum(len(rows) for rows in written.values())
    line = written["web"][100][1]
    trace = line.split("trace_id=")[1][:32]
    filters = tuple(parse(f'{{app=~".+"}} |= "{trace}"').stages)
    found, scan = ing.tenants["t"].select_scanned(ANY, 0, 10**12, None, filters)
    assert [table.column("line").to_pylist() for _, table in found] == [[line]]
    assert scan.chunk_lines < total / 5  # a few blocks of ~20 lines each, not every line
    _, plain = ing.tenants["t"].select_scanned(ANY, 0, 10**12, None, tuple(parse('{app=~".+"} |= "GET"').stages))
    assert plain.chunk_lines == total  # a short word decides nothing: every line is read
