import time

from svclog.actors.clients import IngesterPool
from svclog.ingester.ingester import Ingester, IngesterSettings
from svclog.logql.engine.guard import QueryGuard
from svclog.logql.source import SelectRequest
from svclog.model import Labels, Matcher, MatchType, StreamColumns
from svclog.querier import source as source_module
from svclog.querier.source import StoreSource
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import IndexReader
from svclog.storage.objstore import ObjectStore


class Replicas:
    """Two ingesters holding the same data, as with replication factor 2."""

    def __init__(self, ingesters):
        self.ingesters = ingesters

    def select(self, tenant, matchers, start, end, shard, line_filters=(), deadline=None):
        found = [
            item for ing in self.ingesters for item in ing.select(tenant, matchers, start, end, shard, line_filters)
        ]
        return found, len(self.ingesters)

    def series(self, tenant, matchers, start, end):
        return [s for ing in self.ingesters for s in ing.series(tenant, matchers, start, end)]


def _setup(tmp_path):
    store = ObjectStore(str(tmp_path / "s"))
    chunks = ChunkStore(store)
    ings = [Ingester(IngesterSettings(f"i{i}", str(tmp_path / f"w{i}")), chunks) for i in range(2)]
    return store, chunks, ings


def _push(ings, tenant, app, ts, lines):
    for ing in ings:
        ing.push(tenant, [StreamColumns(Labels({"app": app}.items()), ts, lines)])


def test_merges_store_and_ingesters_without_duplicates(tmp_path):
    store, chunks, ings = _setup(tmp_path)
    _push(ings, "t", "a", [1, 2], ["one", "two"])
    ings[0].flush(force=True)  # one replica flushed, the other still holds the data
    _push(ings, "t", "a", [3], ["three"])
    source = StoreSource(["t"], IndexReader(store), chunks, Replicas(ings))
    (block,) = source.select_logs(SelectRequest((Matcher("app", MatchType.EQ, "a"),), 0, 10))
    assert block.line.to_pylist() == ["one", "two", "three"]
    # copies dropped: the store's two, ingester 0's retained two (flushed) and ingester 1's three
    # against the three entries; the flushing replica answers its flushed chunk too (retain period)
    assert source.stats.duplicates == 5
    assert source.stats.store_chunks_downloaded == 1


def test_multi_tenant_adds_and_filters_tenant_label(tmp_path):
    store, chunks, ings = _setup(tmp_path)
    _push(ings[:1], "a", "x", [1], ["from a"])
    _push(ings[:1], "b", "x", [2], ["from b"])
    source = StoreSource(["a", "b"], IndexReader(store), chunks, Replicas(ings[:1]))
    blocks = list(source.select_logs(SelectRequest((Matcher("app", MatchType.EQ, "x"),), 0, 10)))
    assert sorted(b.labels.get("__tenant_id__") for b in blocks) == ["a", "b"]
    only_b = (Matcher("__tenant_id__", MatchType.EQ, "b"), Matcher("app", MatchType.EQ, "x"))
    (block,) = source.select_logs(SelectRequest(only_b, 0, 10))
    assert block.line.to_pylist() == ["from b"]


def test_existing_tenant_label_is_renamed(tmp_path):
    store, chunks, ings = _setup(tmp_path)
    ings[0].push("a", [StreamColumns(Labels({"app": "x", "__tenant_id__": "fake"}.items()), [1], ["l"])])
    source = StoreSource(["a", "b"], IndexReader(store), chunks, Replicas(ings[:1]))
    (block,) = source.select_logs(SelectRequest((Matcher("app", MatchType.EQ, "x"),), 0, 10))
    assert block.labels.to_dict() == {"app": "x", "__tenant_id__": "a", "original___tenant_id__": "fake"}


def test_series_from_both_places(tmp_path):
    store, chunks, ings = _setup(tmp_path)
    _push(ings[:1], "t", "old", [1], ["x"])
    ings[0].flush(force=True)
    _push(ings[:1], "t", "new", [2], ["y"])
    source = StoreSource(["t"], IndexReader(store), chunks, Replicas(ings[:1]))
    assert [s.get("app") for s in source.select_series((), 0, 10)] == ["new", "old"]


def test_line_filters_are_pushed_to_ingesters_and_chunks(tmp_path):
    from svclog.logql.ast import FilterValue, LineFilter

    store, chunks, ings = _setup(tmp_path)
    _push(ings[:1], "t", "a", [1, 2], ["keep error", "drop"])
    ings[0].flush(force=True)
    _push(ings[:1], "t", "a", [3, 4], ["error again", "nope"])
    source = StoreSource(["t"], IndexReader(store), chunks, Replicas(ings[:1]))
    hint = (LineFilter("|=", (FilterValue("error"),)),)
    (block,) = source.select_logs(SelectRequest((Matcher("app", MatchType.EQ, "a"),), 0, 10, line_filters=hint))
    assert block.line.to_pylist() == ["keep error", "error again"]


class CountingChunks:
    """A ChunkStore that records which streams' chunks were fetched, in order."""

    def __init__(self, inner: ChunkStore):
        self.inner = inner
        self.fetched: list[str] = []

    def fetch(self, ref, start, end, stats=None, may_match=None, lines=True):
        self.fetched.append(ref.labels.get("app"))
        return self.inner.fetch(ref, start, end, stats, may_match, lines)


def test_store_chunks_are_fetched_one_stream_at_a_time(tmp_path):
    store, chunks, ings = _setup(tmp_path)
    for app in ("a", "b", "c"):
        _push(ings[:1], "t", app, [1, 2], [f"{app}1", f"{app}2"])
    ings[0].flush(force=True)
    ings[0].retain_s = 0
    ings[0].expire_retained()  # only the store holds the entries now
    counting = CountingChunks(chunks)
    source = StoreSource(["t"], IndexReader(store), counting, Replicas(ings[:1]))  # type: ignore[arg-type]
    seen = []
    for block in source.select_logs(SelectRequest((Matcher("app", MatchType.RE, ".+"),), 0, 10)):
        # when a stream's block is handed on, no later stream's chunk has been read yet
        seen.append(block.labels.get("app"))
        assert counting.fetched == seen
    assert seen == ["a", "b", "c"]
    assert source.stats.store_chunks_downloaded == 3 and source.stats.store_lines == 6


class PagingReplicas(IngesterPool):
    """The pool's paged select (as the querier's) over in-process ingesters."""

    def __init__(self, ingesters):
        self.ingesters = ingesters

    def _fan_out_each(self, method, args_for, strict=False, on_cancel=None):
        out = []
        for n, ing in enumerate(self.ingesters):
            args = args_for(f"i{n}")
            if args is not None:
                tenant, matchers, start, end, shard, line_filters, deadline, after, page_bytes = args
                packed = ing.select_packed(
                    tenant, matchers, start, end, shard, line_filters, deadline, None, after, page_bytes
                )
                out.append((f"i{n}", packed))
        return out

    def series(self, tenant, matchers, start, end):
        return [s for ing in self.ingesters for s in ing.series(tenant, matchers, start, end)]


def test_pages_of_unflushed_streams_each_take_the_flushed_chunks_of_their_label_range(tmp_path, monkeypatch):
    store, chunks, ings = _setup(tmp_path)
    gone = Ingester(IngesterSettings("gone", str(tmp_path / "gone")), chunks)
    apps = [f"app{i:02d}" for i in range(10)]
    for app in apps[::2]:  # flushed by an ingester that left: only the store has these
        _push([gone], "t", app, [1, 2], [f"{app} flushed", f"{app} also"])
    gone.flush(force=True)
    for app in apps:
        _push(ings, "t", app, [5, 6], [f"{app} fresh", "y" * 40])
    any_app = (Matcher("app", MatchType.RE, ".+"),)

    def lines(page_bytes: int) -> list[tuple[str | None, list[str]]]:
        monkeypatch.setattr(source_module, "INGESTER_PAGE_BYTES", page_bytes)
        source = StoreSource(["t"], IndexReader(store), chunks, PagingReplicas(ings))
        return [(b.labels.get("app"), b.line.to_pylist()) for b in source.select_logs(SelectRequest(any_app, 0, 10))]

    whole = lines(0)
    assert [app for app, _ in whole] == apps
    assert whole[0][1] == ["app00 flushed", "app00 also", "app00 fresh", "y" * 40]
    for page_bytes in (1, 60, 130):
        assert lines(page_bytes) == whole


def test_the_next_page_is_read_while_this_one_is_and_dropped_when_the_reader_stops(tmp_path, monkeypatch):
    _, chunks, ings = _setup(tmp_path)
    store = ObjectStore(str(tmp_path / "s"))
    apps = [f"app{i:02d}" for i in range(6)]
    for app in apps:
        _push(ings, "t", app, [5, 6], [f"{app} fresh", "y" * 40])
    monkeypatch.setattr(source_module, "INGESTER_PAGE_BYTES", 1)  # a page per stream and ingester
    asked: list[object] = []

    class Recording(PagingReplicas):
        def select(self, *args, **kwargs):
            asked.append(kwargs.get("after"))
            return super().select(*args, **kwargs)

    guard = QueryGuard()
    source = StoreSource(["t"], IndexReader(store), chunks, Recording(ings), guard=guard)
    blocks = source.select_logs(SelectRequest((Matcher("app", MatchType.RE, ".+"),), 0, 10))
    first = next(blocks)
    deadline = time.monotonic() + 5
    while len(asked) < 2 and time.monotonic() < deadline:  # the second page, asked before the first is read
        time.sleep(0.01)
    assert first.labels.get("app") == "app00" and len(asked) == 2
    blocks.close()  # the reader stops: what the page read ahead held is given back
    assert guard.held == 0
