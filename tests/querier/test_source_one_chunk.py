"""A stream read from one stored chunk alone is yielded as read (sealed chunks are already sorted and
de-duplicated); two chunks of it (replicas, later flushes) are still merged, sorted and de-duplicated."""

import pyarrow as pa

from svclog.chunk.format import CHUNK_SCHEMA
from svclog.chunk.head import SealedChunk
from svclog.logql.source import SelectRequest
from svclog.model import Labels, Matcher, MatchType
from svclog.querier import source as source_module
from svclog.querier.source import StoreSource
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import IndexReader
from svclog.storage.objstore import ObjectStore

APP = (Matcher("app", MatchType.RE, ".+"),)


def _chunk(rows: list[tuple[int, str]], sealed_ns: int) -> SealedChunk:
    table = pa.Table.from_pydict(
        {"ts": [t for t, _ in rows], "line": [line for _, line in rows], "metadata": [None] * len(rows)},
        schema=CHUNK_SCHEMA,
    )
    return SealedChunk.from_table(table, sealed_ns)


def _read(tmp_path, monkeypatch, chunks: list[tuple[Labels, SealedChunk]]) -> tuple[list, int]:
    store = ChunkStore(ObjectStore(str(tmp_path / "s")), block_bytes=64)
    store.put_chunks("t", chunks, "w")
    calls = []
    real = source_module.sort_dedupe

    def counting(table):
        calls.append(table.num_rows)
        return real(table)

    monkeypatch.setattr(source_module, "sort_dedupe", counting)
    src = StoreSource(["t"], IndexReader(store.store), store, None)
    rows = [
        (block.labels, t, line)
        for block in src.select_logs(SelectRequest(APP, 0, 10**6))
        for t, line in zip(block.ts.to_pylist(), block.line.to_pylist(), strict=True)
    ]
    return rows, len(calls)


def test_one_chunk_is_yielded_in_order_without_a_merge(tmp_path, monkeypatch):
    a = Labels({"app": "a"}.items())
    written = [(t, f"line {t % 7}") for t in (5, 1, 9, 3, 3, 7, 2)]  # pushed out of order, one repeat
    rows, merges = _read(tmp_path, monkeypatch, [(a, _chunk(written, 1))])
    assert rows == [(a, t, line) for t, line in sorted(set(written), key=lambda r: r[0])]
    assert merges == 0


def test_two_chunks_of_a_stream_are_still_merged_and_deduplicated(tmp_path, monkeypatch):
    a = Labels({"app": "a"}.items())
    first, second = [(1, "x"), (4, "y")], [(1, "x"), (2, "z"), (4, "y")]  # a replica's chunk repeats rows
    rows, merges = _read(tmp_path, monkeypatch, [(a, _chunk(first, 1)), (a, _chunk(second, 2))])
    assert rows == [(a, 1, "x"), (a, 2, "z"), (a, 4, "y")]
    assert merges == 1
