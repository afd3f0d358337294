"""chunk_retain_period: a querier whose index listing predates a flush still finds every entry.

The querier's ObjectStore has its own root spelling (a symlink to the same directory), so its
listing cache does not see the ingester's writes as its own: as for another process, only
the listing TTL refreshes it. One fake clock drives both the listing TTL and the retain period.
"""

from __future__ import annotations

import os
import random

import pytest

from svclog.ingester import ingester as ingester_module
from svclog.ingester.ingester import Ingester, IngesterSettings
from svclog.logql.source import SelectRequest
from svclog.model import Labels, Matcher, MatchType, StreamColumns
from svclog.querier import source as source_module
from svclog.querier.source import StoreSource
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import LISTING_TTL_S, MIN_CHUNK_RETAIN_S, IndexReader
from svclog.storage.objstore import ObjectStore

APPS = ("a", "b", "c")
ANY = (Matcher("app", MatchType.RE, ".+"),)


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Ingesters:
    def __init__(self, ing: Ingester):
        self.ing = ing

    def select(self, tenant, matchers, start, end, shard, line_filters=(), deadline=None):
        return self.ing.select(tenant, matchers, start, end, shard, line_filters), 1

    def series(self, tenant, matchers, start, end):
        return self.ing.series(tenant, matchers, start, end)


def _stores(tmp_path, monkeypatch) -> tuple[Clock, Ingester, ObjectStore, IndexReader]:
    """An ingester, and the querier's view of the same store with its index reader."""
    clock = Clock()
    monkeypatch.setattr(ingester_module.time, "monotonic", clock)
    (tmp_path / "store").mkdir()
    os.symlink(tmp_path / "store", tmp_path / "alias")  # the querier's "other process" view of the store
    ing = Ingester(IngesterSettings("ing-0", str(tmp_path / "wal")), ChunkStore(ObjectStore(str(tmp_path / "store"))))
    querier_store = ObjectStore(str(tmp_path / "alias"))
    reader = IndexReader(querier_store, clock=clock)  # the default listing TTL, as a querier runs
    return clock, ing, querier_store, reader


@pytest.fixture
def world(tmp_path, monkeypatch):
    clock, ing, querier_store, reader = _stores(tmp_path, monkeypatch)
    source = lambda: StoreSource(  # noqa: E731 - a fresh source (and stats) per query, one reader for all
        ["t"], reader, ChunkStore(querier_store), Ingesters(ing)
    )
    return clock, ing, source


def _query(source) -> dict[str, list[tuple[int, str]]]:
    request = SelectRequest((Matcher("app", MatchType.RE, ".+"),), 0, 10**12)
    return {str(b.labels): list(zip(b.ts.to_pylist(), b.line.to_pylist())) for b in source().select_logs(request)}


def _push(ing, expected, app, ts, line):
    ing.push("t", [StreamColumns(Labels({"app": app}.items()), [ts], [line])])
    expected.setdefault(f'{{app="{app}"}}', []).append((ts, line))


def test_a_listing_made_before_a_flush_misses_nothing(world):
    clock, ing, source = world
    expected: dict = {}
    for i in range(5):
        _push(ing, expected, "a", 100 + i, f"line {i}")
    assert _query(source) == expected  # the querier has now listed the (empty) index and keeps it
    assert ing.flush(force=True) == 1
    clock.now += LISTING_TTL_S - 0.1  # the listing is still fresh: it does not show the new segment
    assert _query(source) == expected  # answered by the ingester's retained chunk
    clock.now += 0.2  # listing expired: the store answers as well, de-duplicated with the ingester
    assert _query(source) == expected
    clock.now += MIN_CHUNK_RETAIN_S
    assert ing.expire_retained() == 1 and ing.memory_chunks() == 0
    assert _query(source) == expected  # the store alone


def test_expired_chunks_counts_every_drop_whether_an_expiry_or_a_later_flush_made_it(world):
    # the ingester actor trims the C heap when this count moves (freed chunks stay in glibc's arenas)
    clock, ing, _ = world
    expected: dict = {}
    _push(ing, expected, "a", 100, "one")
    assert ing.flush(force=True) == 1
    assert ing.expire_retained() == 0 and ing.stats.expired_chunks == 0  # still retained
    clock.now += MIN_CHUNK_RETAIN_S
    assert ing.expire_retained() == 1 and ing.stats.expired_chunks == 1
    _push(ing, expected, "b", 200, "two")
    assert ing.flush(force=True) == 1
    clock.now += MIN_CHUNK_RETAIN_S
    assert ing.flush(force=True) == 0  # nothing new to flush, but the flush expires the retained chunk
    assert ing.stats.expired_chunks == 2 and ing.memory_chunks() == 0


def test_without_the_retain_period_a_stale_listing_would_miss_the_flushed_entries(world):
    clock, ing, source = world
    ing.retain_s = 0.0  # the old behaviour: a flushed chunk leaves the ingester at once
    expected: dict = {}
    _push(ing, expected, "a", 100, "x")
    assert _query(source) == expected
    ing.flush(force=True)
    clock.now += 1.0
    assert _query(source) == {}  # what the retain period prevents
    clock.now += LISTING_TTL_S
    assert _query(source) == expected


def _interleave(clock, ing, source, rng: random.Random, steps: int) -> None:
    """Random pushes, flushes, expiries and clock steps, every query answering every entry."""
    expected: dict = {}
    ts = n = 0
    for step in range(steps):
        for _ in range(rng.randint(0, 3)):
            ts, n = ts + rng.choice((0, 1)), n + 1  # shared timestamps too: both lines must stay
            _push(ing, expected, rng.choice(APPS), ts, f"entry {n}")
        if rng.random() < 0.3:
            ing.flush(force=rng.random() < 0.7)
        if rng.random() < 0.2:
            ing.expire_retained()
        clock.now += rng.uniform(0, LISTING_TTL_S / 2)
        got = _query(source)
        assert got == {k: sorted(v, key=lambda e: e[0]) for k, v in expected.items()}, f"step {step}"


def test_interleaved_pushes_flushes_and_queries_always_see_every_entry(world):
    clock, ing, source = world
    _interleave(clock, ing, source, random.Random(7), 150)


class PackedIngesters(Ingesters):
    """One ingester answering as its actor does (`select_packed`, paged, with the store keys of
    the retained chunks its page answered from), unpacked as the querier's client unpacks it."""

    pages = True
    applies_line_filters = True

    def __init__(self, ing: Ingester):
        super().__init__(ing)
        self.covered: list[frozenset[str]] = []

    def select(self, tenant, matchers, start, end, shard, line_filters=(), deadline=None, after=None, page_bytes=0):
        own = (after or {}).get("ing-0")
        packed = self.ing.select_packed(
            tenant, matchers, start, end, shard, line_filters, deadline, None, own, page_bytes
        )
        self.covered.append(packed.covered)
        cursor = {"ing-0": packed.more_after} if packed.more_after is not None else None
        return packed.unpack(), 1, packed.scan, cursor, packed.covered


@pytest.fixture
def packed_world(tmp_path, monkeypatch):
    clock, ing, querier_store, reader = _stores(tmp_path, monkeypatch)
    ingesters = PackedIngesters(ing)
    sources: list[StoreSource] = []

    def source() -> StoreSource:
        sources.append(StoreSource(["t"], reader, ChunkStore(querier_store), ingesters))
        return sources[-1]

    return clock, ing, source, ingesters, sources


def test_chunks_the_ingester_still_retains_are_not_read_from_the_store_as_well(packed_world, monkeypatch):
    clock, ing, source, ingesters, sources = packed_world
    monkeypatch.setattr(source_module, "INGESTER_PAGE_BYTES", 200)  # a page per stream or two
    expected: dict = {}
    for i in range(30):
        _push(ing, expected, APPS[i % 3], 100 + i, f"line {i} " + "x" * 20)
    assert ing.flush(force=True) == 3
    clock.now += LISTING_TTL_S + 0.1  # the querier's listing shows the three chunks now
    assert _query(source) == expected
    stats = sources[-1].stats
    assert stats.store_lines == 0 and stats.duplicates == 0 and stats.store_chunks_ref == 0
    listed = {ref.key for refs in sources[-1].index.chunk_refs("t", ANY, 0, 10**12, None).values() for ref in refs}
    assert len(listed) == 3 and frozenset().union(*ingesters.covered[-3:]) >= listed
    assert len([c for c in ingesters.covered[-4:] if c]) >= 2  # several pages, each naming its own
    clock.now += MIN_CHUNK_RETAIN_S
    assert ing.expire_retained() == 3
    assert _query(source) == expected  # the store alone now
    assert sources[-1].stats.store_lines == 30


def test_a_chunk_split_by_index_period_is_named_by_all_its_files(packed_world):
    clock, ing, source, ingesters, sources = packed_world
    expected: dict = {}
    day = 24 * 3600 * 10**9
    _push(ing, expected, "a", day - 5, "before midnight")
    _push(ing, expected, "a", day + 5, "after midnight")
    assert ing.flush(force=True) == 1
    clock.now += LISTING_TTL_S + 0.1
    request = SelectRequest(ANY, 0, 10**15)
    got = {str(b.labels): list(zip(b.ts.to_pylist(), b.line.to_pylist())) for b in source().select_logs(request)}
    assert got == expected
    assert len(ingesters.covered[-1]) == 2 and sources[-1].stats.store_lines == 0


@pytest.mark.parametrize("seed", [7, 8])
def test_interleaved_pushes_flushes_and_paged_queries_always_see_every_entry(packed_world, monkeypatch, seed):
    clock, ing, source, _, _ = packed_world
    monkeypatch.setattr(source_module, "INGESTER_PAGE_BYTES", 64)
    _interleave(clock, ing, source, random.Random(seed), 120)
