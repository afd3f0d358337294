"""Query stats are honest: what ingesters scanned (before filters), head vs sealed, reached vs answers."""

import pyarrow as pa

from svclog.chunk.format import CHUNK_SCHEMA
from svclog.logql.parser import parse
from svclog.logql.source import IngesterScan, SelectRequest, SourceStats
from svclog.model import Labels, Matcher, MatchType
from svclog.querier.source import StoreSource
from svclog.querier.stats import build_stats, merge_source_stats
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import IndexReader
from svclog.storage.objstore import ObjectStore

APP = (Matcher("app", MatchType.RE, ".+"),)
HELLO = tuple(parse('{app=~".+"} |= "hello"').stages)  # the leading line filter, as the planner passes it


def table(lines: list[str]) -> pa.Table:
    return pa.Table.from_pydict(
        {"ts": list(range(1, len(lines) + 1)), "line": lines, "metadata": [None] * len(lines)}, schema=CHUNK_SCHEMA
    )


class ScanningIngesters:
    """Ingesters that filter what they send and say what they scanned for it (one answer each)."""

    applies_line_filters = True

    def __init__(self, lines: list[str], scan: IngesterScan | None, reached: int = 1):
        self.lines, self.scan, self.reached = lines, scan, reached

    def select(self, tenant, matchers, start, end, shard, line_filters=(), deadline=None):
        kept = [line for line in self.lines if not line_filters or "hello" in line]
        found = [(Labels({"app": "a"}.items()), table(kept))] if kept else []
        return (found, self.reached) if self.scan is None else (found, self.reached, self.scan)

    def series(self, tenant, matchers, start, end):
        return []


def source(tmp_path, ingesters) -> StoreSource:
    store = ObjectStore(str(tmp_path / "s"))
    return StoreSource(["t"], IndexReader(store), ChunkStore(store), ingesters)


def read(src: StoreSource, line_filters=()) -> dict:
    list(src.select_logs(SelectRequest(APP, 0, 100, line_filters=line_filters)))
    return build_stats(src.stats, 1.0)


def test_lines_scanned_before_the_pushed_down_filter_are_counted(tmp_path):
    lines = ["hello a", "bye", "other"]
    scan = IngesterScan(head_lines=1, head_bytes=7, chunk_lines=2, chunk_bytes=8, chunks=2)
    stats = read(source(tmp_path, ScanningIngesters(lines, scan)), HELLO)
    assert stats["summary"]["totalLinesProcessed"] == 3
    assert stats["summary"]["totalBytesProcessed"] == 15
    assert stats["ingester"]["totalLinesSent"] == 1


def test_head_lines_apart_from_sealed_chunk_lines(tmp_path):
    scan = IngesterScan(head_lines=1, head_bytes=7, chunk_lines=2, chunk_bytes=8, chunks=2)
    ingester = read(source(tmp_path, ScanningIngesters(["hello a", "b", "c"], scan)))["ingester"]
    assert (ingester["headChunkLines"], ingester["headChunkBytes"]) == (1, 7)
    assert (ingester["decompressedLines"], ingester["decompressedBytes"]) == (2, 8)


def test_chunks_matched_come_from_the_ingesters(tmp_path):
    scan = IngesterScan(head_lines=3, head_bytes=9, chunks=4)
    assert read(source(tmp_path, ScanningIngesters(["a", "b", "c"], scan)))["ingester"]["totalChunksMatched"] == 4


def test_reader_without_scan_counts_what_it_sent(tmp_path):
    ingester = read(source(tmp_path, ScanningIngesters(["hello a", "bye"], None)))["ingester"]
    assert (ingester["headChunkLines"], ingester["totalLinesSent"], ingester["totalChunksMatched"]) == (2, 2, 0)


def test_reached_is_distinct_ingesters_and_batches_every_answer(tmp_path):
    parts = []
    for _ in range(4):  # four sub-queries (time pieces or shards), each asks both ingesters
        src = source(tmp_path, ScanningIngesters(["a"], IngesterScan(head_lines=1, head_bytes=1), reached=2))
        list(src.select_logs(SelectRequest(APP, 0, 100)))
        parts.append(src.stats)
    ingester = build_stats(merge_source_stats(parts), 1.0)["ingester"]
    assert (ingester["totalReached"], ingester["totalBatches"]) == (2, 8)


def test_merge_adds_counters_and_keeps_reached_at_most():
    merged = merge_source_stats(
        [
            SourceStats(ingester_reached=1, ingester_batches=1, store_lines=2),
            SourceStats(ingester_reached=3, ingester_batches=3, store_lines=5),
        ]
    )
    assert (merged.ingester_reached, merged.ingester_batches, merged.store_lines) == (3, 4, 7)
