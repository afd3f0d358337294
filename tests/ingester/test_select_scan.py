"""What an ingester's select scanned, before pushed-down line filters, for the query stats."""

import pyarrow as pa

from svclog.actors.clients import IngesterPool
from svclog.ingester.instance import PackedStreams, TenantInstance
from svclog.ingester.stream import line_bytes
from svclog.logql.parser import parse
from svclog.logql.source import IngesterScan, SelectRequest
from svclog.model import Labels, Matcher, MatchType, StreamColumns
from svclog.querier import source as source_module
from svclog.querier.source import StoreSource
from svclog.querier.stats import build_stats
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import IndexReader
from svclog.storage.objstore import ObjectStore

ANY_APP = (Matcher("app", MatchType.RE, ".+"),)
HELLO = tuple(parse('{app=~".+"} |= "hello"').stages)


def _stream(app, ts, lines):
    return StreamColumns(Labels({"app": app}.items()), ts, lines, None)


def _instance(*streams: StreamColumns) -> TenantInstance:
    instance = TenantInstance("t")
    instance.push(list(streams), 0)
    return instance


def _cut(instance: TenantInstance, app: str) -> None:
    instance.streams[Labels({"app": app}.items())].cut()


def test_lines_and_bytes_are_counted_before_the_line_filter():
    instance = _instance(_stream("a", [1, 2, 3], ["hello", "bye", "other"]))
    found, scan = instance.select_scanned(ANY_APP, 0, 10, line_filters=HELLO)
    assert [t.column("line").to_pylist() for _, t in found] == [["hello"]]
    assert scan == IngesterScan(head_lines=3, head_bytes=13, chunks=1)


def test_head_apart_from_sealed_chunks_and_chunks_matched():
    instance = _instance(_stream("a", [1, 2], ["aa", "bbb"]), _stream("b", [1], ["c"]))
    _cut(instance, "a")
    instance.push([_stream("a", [3, 4], ["dddd", "e"])], 0)
    _cut(instance, "a")
    instance.push([_stream("a", [5], ["ff"])], 0)
    _, scan = instance.select_scanned(ANY_APP, 0, 10)
    assert scan == IngesterScan(head_lines=2, head_bytes=3, chunk_lines=4, chunk_bytes=10, chunks=4)


def test_only_the_time_range_and_matching_streams_count():
    instance = _instance(_stream("a", [1, 2, 3], ["x", "yy", "zzz"]), _stream("b", [2], ["other"]))
    _cut(instance, "a")
    instance.push([_stream("a", [20, 1], ["late", "early"])], 0)  # head, unsorted
    _, scan = instance.select_scanned((Matcher("app", MatchType.EQ, "a"),), 2, 4)
    assert scan == IngesterScan(chunk_lines=2, chunk_bytes=5, chunks=2)  # head overlaps [2, 4) but has no entry in it
    _, scan = instance.select_scanned(ANY_APP, 30, 40)
    assert scan == IngesterScan()


def test_the_packed_answer_carries_the_scan():
    instance = _instance(_stream("a", [1, 2], ["hello", "no"]))
    packed = instance.select_packed(ANY_APP, 0, 10, line_filters=HELLO)
    assert packed.table.num_rows == 1
    assert packed.scan == IngesterScan(head_lines=2, head_bytes=7, chunks=1)


def test_line_bytes_reads_offsets_of_slices():
    table = pa.table({"line": pa.array(["a", "bb", "ccc", "dddd"])})
    assert line_bytes(table) == 10
    assert line_bytes(table.slice(1, 2)) == 5
    assert line_bytes(table.slice(4, 0)) == 0
    assert line_bytes(pa.table({"line": pa.chunked_array([["ab"], ["cde"]], pa.large_string())})) == 5


class _Pool(IngesterPool):
    """The pool's select over in-process ingesters instead of Ray actors."""

    def __init__(self, instances: list[TenantInstance]):
        self.instances = instances

    def _fan_out_each(self, method, args_for, strict=False, on_cancel=None):
        assert method == "select"
        out = []
        for n, instance in enumerate(self.instances):
            args = args_for(f"i{n}")
            if args is not None:
                _, matchers, start, end, shard, line_filters, deadline, after, page_bytes = args
                packed = instance.select_packed(
                    matchers, start, end, shard, line_filters, deadline, None, after, page_bytes
                )
                out.append((f"i{n}", packed))
        return out


def test_pool_sums_every_ingesters_scan_as_the_reference():
    replicas = [_instance(_stream("a", [1, 2, 3], ["hello", "bye", "other"])) for _ in range(2)]
    found, reached, scan, cursor, covered = _Pool(replicas).select("t", ANY_APP, 0, 10, None, HELLO)
    assert (len(found), reached, cursor, covered) == (2, 2, None, frozenset())  # nothing flushed yet
    assert scan == IngesterScan(head_lines=6, head_bytes=26, chunks=2)
    assert _Pool([]).select("t", ANY_APP, 0, 10, None)[1:] == (0, IngesterScan(), None, frozenset())


def test_query_stats_count_lines_the_filter_dropped(tmp_path):
    instance = _instance(_stream("a", [1, 2, 3], ["hello", "bye", "other"]))
    _cut(instance, "a")
    instance.push([_stream("a", [4], ["hello again"])], 0)
    store = ObjectStore(str(tmp_path / "s"))
    source = StoreSource(["t"], IndexReader(store), ChunkStore(store), _Pool([instance]))
    blocks = list(source.select_logs(SelectRequest(ANY_APP, 0, 10, line_filters=HELLO)))
    assert [b.line.to_pylist() for b in blocks] == [["hello", "hello again"]]
    stats = build_stats(source.stats, 1.0)
    assert stats["summary"]["totalLinesProcessed"] == 4
    assert stats["ingester"]["totalLinesSent"] == 2
    assert (stats["ingester"]["headChunkLines"], stats["ingester"]["decompressedLines"]) == (1, 3)
    assert stats["ingester"]["totalChunksMatched"] == 2


def test_an_empty_pack_still_carries_its_scan():
    assert PackedStreams.pack([], IngesterScan(head_lines=1)).scan.head_lines == 1
    assert PackedStreams.pack([]).scan == IngesterScan()


def test_a_page_ends_after_the_stream_that_fills_it_and_the_next_starts_after_it():
    instance = _instance(*(_stream(app, [1, 2], ["x" * 10, "y" * 10]) for app in "dcba"))
    pages, after = [], None
    while True:
        found, _, after, _ = instance.select_page(ANY_APP, 0, 10, after=after, page_bytes=30)
        pages.append([labels.get("app") for labels, _ in found])
        if after is None:
            break
    assert pages == [["a", "b"], ["c", "d"]]


def test_a_paged_select_answers_as_one_select_with_replicas_paging_apart(tmp_path, monkeypatch):
    """Replicas holding different streams page on their own: the pool cuts each page at the
    smallest last stream, and the source merges each page with the store's chunks of its range."""
    apps = [f"app{i:02d}" for i in range(12)]
    full = _instance(*(_stream(app, [1, 2, 3], [f"{app} one", f"{app} two", "z" * 50]) for app in apps))
    partial = _instance(*(_stream(app, [1, 2, 3], [f"{app} one", f"{app} two", "z" * 50]) for app in apps[::3]))
    for app in apps[:6]:
        _cut(full, app)
    store = ObjectStore(str(tmp_path / "s"))
    chunks = ChunkStore(store)

    def select_all(page_bytes: int) -> tuple[list[tuple[str | None, list[str]]], int, int]:
        monkeypatch.setattr(source_module, "INGESTER_PAGE_BYTES", page_bytes)
        source = StoreSource(["t"], IndexReader(store), chunks, _Pool([full, partial]))
        blocks = [(b.labels.get("app"), b.line.to_pylist()) for b in source.select_logs(SelectRequest(ANY_APP, 0, 10))]
        return blocks, source.stats.ingester_lines_sent, source.stats.ingester_lines  # each stream sent once

    whole = select_all(0)
    assert [app for app, _ in whole[0]] == apps and all(len(lines) == 3 for _, lines in whole[0])
    assert whole[1:] == (48, 48)
    assert select_all(1) == whole  # one stream a page
    assert select_all(150) == whole  # pages of two or three streams, cut apart on the two replicas


def test_a_filtered_select_pages_in_label_order_and_counts_what_it_scanned():
    """Streams are filtered side by side on a pool (svclog/ingester/instance.py `_filtered_page`):
    pages still come in label order, end after the stream that fills them, and count the lines
    and chunks of the streams taken, not of those filtered ahead and dropped."""
    apps = [f"app{i:02d}" for i in range(20)]
    instance = _instance(*(_stream(app, [1, 2, 3], [f"hello {app}", "bye", "hello " + "x" * 20]) for app in apps))
    for app in apps[::4]:
        _cut(instance, app)  # some streams' lines sit in cut chunks, the rest in heads
    whole, whole_scan = instance.select_scanned(ANY_APP, 0, 10, line_filters=HELLO)
    assert [labels.get("app") for labels, _ in whole] == apps
    assert all(t.column("line").to_pylist()[0].startswith("hello") and t.num_rows == 2 for _, t in whole)
    assert whole_scan.head_lines + whole_scan.chunk_lines == 60 and whole_scan.chunks == 20
    pages, after, lines, chunks = [], None, 0, 0
    while True:
        found, scan, after, _ = instance.select_page(ANY_APP, 0, 10, line_filters=HELLO, after=after, page_bytes=100)
        pages.append([labels.get("app") for labels, _ in found])
        lines += scan.head_lines + scan.chunk_lines
        chunks += scan.chunks
        if after is None:
            break
    assert [app for page in pages for app in page] == apps
    assert len(pages) > 3 and all(len(page) <= 3 for page in pages)  # 2 lines of ~31 bytes per stream
    assert (lines, chunks) == (60, 20)
