"""IndexGateway answers as the direct index read does, and its segment cache stays bounded."""

import pytest

from svclog.indexgateway.gateway import GatewaySettings, IndexGateway
from svclog.model import Labels, Matcher, MatchType
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import IndexReader
from svclog.storage.objstore import ObjectStore
from tests.indexgateway.conftest import DAY, _chunk

LOOKUPS = [
    ("t1", (Matcher("app", MatchType.EQ, "api"),), 0, 3 * DAY, None),
    ("t1", (Matcher("pod", MatchType.RE, "1|2"),), DAY, 2 * DAY, None),
    ("t1", (), 0, 3 * DAY, (1, 4)),
    ("t2", (Matcher("app", MatchType.NEQ, "db"),), 0, 3 * DAY, None),
    ("t3", (), 0, 3 * DAY, None),  # no such tenant
]


@pytest.mark.parametrize("tenant,matchers,start,end,shard", LOOKUPS)
def test_lookups_equal_the_direct_index_read(store, tenant, matchers, start, end, shard):
    gateway, direct = IndexGateway(store), IndexReader(ObjectStore(store.root))
    assert gateway.chunk_refs(tenant, matchers, start, end, shard) == direct.chunk_refs(
        tenant, matchers, start, end, shard
    )
    assert gateway.series(tenant, matchers, start, end) == direct.series(tenant, matchers, start, end)


def test_repeated_lookups_read_each_segment_once(store):
    gateway = IndexGateway(store)
    first = gateway.chunk_refs("t1", (), 0, 3 * DAY)
    reads = store.index_reads
    assert reads == 6  # 3 periods x 2 segments
    assert gateway.chunk_refs("t1", (), 0, 3 * DAY) == first
    gateway.series("t1", (Matcher("app", MatchType.EQ, "db"),), 0, 3 * DAY)
    assert store.index_reads == reads
    stats = gateway.stats()
    assert stats["lookups"] == {"chunk_refs": 2, "series": 1} and stats["tenants"] == 1
    assert stats["segments_read"] == 6 and stats["cache_hits"] == 12 and stats["cached_segments"] == 6


def test_a_new_segment_is_seen_at_once(store):
    gateway = IndexGateway(store)
    before = gateway.series("t2", (), 0, DAY)
    late = Labels({"app": "late"}.items())
    ChunkStore(store).put_chunks("t2", [(late, _chunk([5]))], "w9")
    assert gateway.series("t2", (), 0, DAY) == before | {late}


def test_the_cache_is_bounded_by_count(store):
    gateway = IndexGateway(store, GatewaySettings(max_cached_segments=2))
    for _ in range(2):
        gateway.chunk_refs("t1", (), 0, 3 * DAY)
    assert gateway.stats()["cached_segments"] == 2
    assert store.index_reads == 12  # LRU over 6 segments cycled through a cache of 2: every read misses


def test_the_cache_is_bounded_by_bytes(store):
    one = IndexGateway(store, GatewaySettings(max_cached_segments=100))
    one.chunk_refs("t1", (), 0, DAY)
    segment_bytes = max(seg.table.nbytes for seg in one.reader._cache.values())
    gateway = IndexGateway(store, GatewaySettings(max_cached_segments=100, max_cached_bytes=3 * segment_bytes))
    gateway.chunk_refs("t1", (), 0, 3 * DAY)
    stats = gateway.stats()
    assert 1 <= stats["cached_segments"] <= 3 and stats["cached_bytes"] <= 3 * segment_bytes
