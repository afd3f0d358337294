"""The querier's store reads ask the token index: same answers, fewer blocks decoded, counted in stats."""

import random
from dataclasses import dataclass

import pyarrow as pa

from svclog.chunk.format import CHUNK_SCHEMA
from svclog.chunk.head import SealedChunk
from svclog.logql.parser import parse
from svclog.logql.source import SelectRequest
from svclog.model import Labels, Matcher, MatchType
from svclog.querier.source import StoreSource
from svclog.querier.stats import build_stats, merge_source_stats
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import IndexReader
from svclog.storage.objstore import ObjectStore

APP = (Matcher("app", MatchType.RE, ".+"),)


@dataclass(frozen=True)
class RequestWithMetadata(SelectRequest):
    """A request carrying `name="value"` filters on labels before any parser (the engine's hint)."""

    metadata_equals: tuple = ()


def _ids(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.getrandbits(128):032x}" for _ in range(n)]


def _store(tmp_path, ids: list[str], token_index: bool = True) -> ChunkStore:
    store = ObjectStore(str(tmp_path / ("with" if token_index else "without")))
    chunks = ChunkStore(store, block_bytes=16384, token_index=token_index)
    streams = []
    for s, app in enumerate(("api", "web")):
        rows = range(s, len(ids), 2)
        table = pa.Table.from_pydict(
            {
                "ts": [i * 1000 for i in rows],
                "line": [f'level=info msg="done" path=/a/{i} trace_id={ids[i]}' for i in rows],
                "metadata": [[("span", ids[i][:16]), ("req", ids[-1 - i])] for i in rows],
            },
            schema=CHUNK_SCHEMA,
        )
        streams.append(
            (
                Labels({"app": app, "req": "stream-label"}.items() if app == "web" else {"app": app}.items()),
                SealedChunk.from_table(table, 1),
            )
        )
    chunks.put_chunks("t", streams, "w")
    return chunks


def _select(chunks: ChunkStore, request: SelectRequest) -> tuple[list, dict]:
    """The rows the engine would keep (the source leaves the filtering itself to it), and the stats."""
    src = StoreSource(["t"], IndexReader(chunks.store), chunks, None)
    rows = []
    for block in src.select_logs(request):
        metadata = block.metadata.to_pylist() if block.metadata is not None else [None] * len(block)
        for t, line, pairs in zip(block.ts.to_pylist(), block.line.to_pylist(), metadata):
            labels = {**dict(pairs or []), **dict(block.labels.items)}
            if all(labels.get(name, "") == value for name, value in getattr(request, "metadata_equals", ())):
                rows.append((block.labels, t, line))
    return rows, build_stats(merge_source_stats([src.stats, src.stats]), 1.0)["store"]


def test_a_needle_reads_one_block_and_answers_as_a_full_scan(tmp_path):
    ids = _ids(1, 3000)
    with_index, without = _store(tmp_path, ids), _store(tmp_path, ids, token_index=False)
    filters = tuple(parse(f'{{app=~".+"}} |= "{ids[1234]}"').stages)
    request = SelectRequest(APP, 0, 10**12, line_filters=filters)
    rows, stats = _select(with_index, request)
    assert rows == _select(without, request)[0] and len(rows) == 1
    assert stats["totalBlocks"] == stats["blocksCheckedByTokenIndex"] > 20  # counted twice: two sub-queries merged
    assert stats["blocksSkippedByTokenIndex"] >= stats["totalBlocks"] - 4
    assert stats["chunksSkippedByTokenIndex"] == 2  # the other stream's chunk, in both sub-queries
    _, plain = _select(without, request)
    assert plain["blocksCheckedByTokenIndex"] == plain["blocksSkippedByTokenIndex"] == 0


def test_structured_metadata_equalities_skip_blocks_but_not_for_stream_labels(tmp_path):
    ids = _ids(2, 3000)
    with_index, without = _store(tmp_path, ids), _store(tmp_path, ids, token_index=False)
    for wanted in (
        (("span", ids[77][:16]),),
        (("req", ids[-1 - 78]),),
        (("req", "stream-label"),),
        (("span", "nope"),),
        (("span", ""),),
    ):
        request = RequestWithMetadata(APP, 0, 10**12, metadata_equals=wanted)
        rows, stats = _select(with_index, request)
        assert rows == _select(without, request)[0], wanted
        if wanted[0] == ("span", "nope"):
            # one key (a pair): ~13% of blocks pass by chance at 5 bits per key
            assert stats["blocksSkippedByTokenIndex"] >= stats["totalBlocks"] * 0.6 > 0
    # `req` is a label of the web stream: its blocks are read whatever the index says
    _, stats = _select(with_index, RequestWithMetadata(APP, 0, 10**12, metadata_equals=(("req", "x"),)))
    assert 0 < stats["blocksSkippedByTokenIndex"] < stats["totalBlocks"]
