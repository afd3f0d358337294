"""Chunk layouts kept apart from chunk bytes: a needle rules chunks out across all known chunks at
once, without fetching them again, and the answers stay those of a full scan."""

import random

import pyarrow as pa
import pytest

from svclog.chunk.format import CHUNK_SCHEMA, chunk_layout
from svclog.chunk.head import SealedChunk
from svclog.logql.parser import parse
from svclog.logql.source import SelectRequest
from svclog.model import Labels, Matcher, MatchType
from svclog.querier.source import StoreSource
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import IndexReader
from svclog.storage.layout_cache import LayoutCache, layout_bytes
from svclog.storage.objstore import ObjectStore

ANY = (Matcher("app", MatchType.RE, ".+"),)
STEP = 1000


def _write(root, lines: dict[str, list[str]], token_index: bool, chunk_rows: int, cache_bytes: int) -> ChunkStore:
    """Each app's lines as chunks of `chunk_rows` entries (one per STEP ns), flushed one by one."""
    chunks = ChunkStore(ObjectStore(str(root)), block_bytes=2048, token_index=token_index, cache_bytes=cache_bytes)
    for app, texts in lines.items():
        for first in range(0, len(texts), chunk_rows):
            part = texts[first : first + chunk_rows]
            table = pa.Table.from_pydict(
                {"ts": [(first + i) * STEP for i in range(len(part))], "line": part, "metadata": [None] * len(part)},
                schema=CHUNK_SCHEMA,
            )
            chunks.put_chunks("t", [(Labels({"app": app}.items()), SealedChunk.from_table(table, first + 1))], "w")
    return chunks


def _lines(rng: random.Random, n: int) -> list[str]:
    words = ["GET", "POST", "timeout", "connection-reset-by-peer-upstream", "ok", "user_profile_service_v2"]
    return [
        f"{rng.choice(words)} trace_id={rng.getrandbits(128):032x} req={rng.getrandbits(64):016x} n={i}"
        for i in range(n)
    ]


def _read(
    chunks: ChunkStore, query: str, windows: int, end: int, index: IndexReader | None = None
) -> tuple[list, dict]:
    """What the engine gets, read in `windows` time windows newest first (as log queries read), and
    the token-index counters."""
    source = StoreSource(["t"], index or IndexReader(chunks.store), chunks, None)
    filters = tuple(parse(query).stages)
    rows = []
    edges = [end * k // windows for k in range(windows + 1)]
    for lo, hi in reversed(list(zip(edges, edges[1:]))):
        for block in source.select_logs(SelectRequest(ANY, lo, hi, line_filters=filters)):
            rows.extend((block.labels, t, line) for t, line in zip(block.ts.to_pylist(), block.line.to_pylist()))
    return sorted(rows), dict(source.stats.extra)


def _needles(rng: random.Random, lines: dict[str, list[str]]) -> list[str]:
    every = [line for texts in lines.values() for line in texts]
    out = []
    for _ in range(12):
        line = rng.choice(every)
        trace = line.split("trace_id=")[1][:32]
        start = rng.randrange(0, 17)
        out.append(f'|= "{trace[start : start + rng.randrange(16, 33 - start)]}"')  # a piece of an id
        out.append(f'|= "req={line.split("req=")[1][:16]}"')
    out += [f'|= "{rng.getrandbits(128):032x}"', '|= "GET"', '|= "connection-reset-by-peer-upstream"']
    out += ['|~ "user_profile_service_v2.*n=1"', '|= "absent-token-0123456789abcdef"']
    out += [f'|= "{rng.getrandbits(128):032x}" or "user_profile_service_v2"', '!= "GET"']
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_needles_answer_as_a_full_scan_cold_and_warm_even_when_chunk_bytes_left_the_cache(tmp_path, seed):
    rng = random.Random(seed)
    lines = {app: _lines(rng, rng.randrange(300, 900)) for app in ("api", "web", "db")}
    end = max(len(texts) for texts in lines.values()) * STEP
    chunk_rows = rng.choice((40, 97, 250))
    # a bytes cache too small for the data: chunks are fetched again on every read
    indexed = _write(tmp_path / "with", lines, True, chunk_rows, cache_bytes=20_000)
    plain = _write(tmp_path / "without", lines, False, chunk_rows, cache_bytes=20_000)
    for needle in _needles(rng, lines):
        query = '{app=~".+"} ' + needle
        windows = rng.choice((1, 3, 5))
        expected, _ = _read(plain, query, windows, end)
        cold, cold_stats = _read(indexed, query, windows, end)
        warm, warm_stats = _read(indexed, query, windows, end)
        assert cold == expected and warm == expected, query
        # the warm read counts the blocks as the cold one did, whether it fetched a chunk or not
        assert warm_stats == cold_stats, query


def test_a_chunk_ruled_out_is_not_fetched_again(tmp_path):
    rng = random.Random(7)
    lines = {"api": _lines(rng, 2000)}
    chunks = _write(tmp_path, lines, True, 100, cache_bytes=0)  # no bytes cache at all
    needle = lines["api"][1234].split("trace_id=")[1][:32]
    query = f'{{app=~".+"}} |= "{needle}"'
    index = IndexReader(chunks.store)  # its segments are read once
    rows, _ = _read(chunks, query, 1, 2000 * STEP, index)
    assert len(rows) == 1
    before = chunks.store.request_counts()["GET"]
    rows, stats = _read(chunks, query, 4, 2000 * STEP, index)
    assert len(rows) == 1
    assert stats["index_chunks_skipped"] >= 17  # 20 chunks, the needle's and ~chance passes read
    assert chunks.store.request_counts()["GET"] - before <= 20 - stats["index_chunks_skipped"]


def test_chunks_without_a_token_index_are_never_ruled_out(tmp_path):
    rng = random.Random(9)
    lines = {"api": _lines(rng, 600), "web": _lines(rng, 600)}
    store = ObjectStore(str(tmp_path))
    old = ChunkStore(store, block_bytes=2048, token_index=False)
    new = ChunkStore(store, block_bytes=2048, token_index=True)
    for app, writer in (("api", old), ("web", new)):
        table = pa.Table.from_pydict(
            {"ts": [i * STEP for i in range(600)], "line": lines[app], "metadata": [None] * 600}, schema=CHUNK_SCHEMA
        )
        writer.put_chunks("t", [(Labels({"app": app}.items()), SealedChunk.from_table(table, 1))], "w")
    reader = ChunkStore(store)
    for app in ("api", "web"):
        needle = lines[app][321].split("trace_id=")[1]
        for _ in range(2):  # cold, then with both layouts stacked
            rows, _ = _read(reader, f'{{app=~".+"}} |= "{needle}"', 3, 600 * STEP)
            assert [r[2] for r in rows] == [lines[app][321]]


def test_the_layout_cache_keeps_the_newest_layouts_within_its_budget(tmp_path):
    rng = random.Random(11)
    chunks = _write(tmp_path, {"api": _lines(rng, 1000)}, True, 100, cache_bytes=0)
    refs = IndexReader(chunks.store).chunk_refs("t", ANY, 0, 10**12)
    keys = [ref.key for chunk_refs in refs.values() for ref in chunk_refs]
    layouts = [(key, chunk_layout(chunks.store.get(key))) for key in keys]
    layouts = [(key, layout) for key, layout in layouts if layout.bounds]
    size = layout_bytes(layouts[0][1])
    cache = LayoutCache(max_bytes=int(size * 3.5))
    for key, layout in layouts[:5]:
        cache.put(key, layout)
    assert len(cache) == 3 and cache.get(layouts[0][0]) is None and cache.get(layouts[4][0]) is layouts[4][1]
    stack = cache.stack()
    assert set(stack.slots) == {key for key, _ in layouts[2:5]} and cache.stack() is stack
    cache.put(layouts[5][0], layouts[5][1])
    assert cache.stack() is not stack and len(cache.stack().lo) == sum(len(lay.bounds) for _, lay in layouts[3:6])
