"""Entries sharing a timestamp keep push order through head blocks, sealing and the chunk format."""

from itertools import pairwise

import numpy as np
import pyarrow as pa

from svclog.chunk.format import decode_chunk, encode_chunk
from svclog.chunk.head import HeadBlock, entries_batch, next_seal_ns, sort_dedupe
from svclog.logql.source import METADATA_TYPE


def _table(ts, lines, md=None):
    return pa.table(
        {
            "ts": pa.array(ts, pa.int64()),
            "line": pa.array(lines, pa.string()),
            "metadata": pa.array(md or [None] * len(ts), METADATA_TYPE),
        }
    )


def _lines(table):
    return table.column("line").to_pylist()


def test_equal_timestamps_keep_push_order_not_line_order():
    out = sort_dedupe(_table([7, 5, 7, 5, 7], ["zeta", "b", "alpha", "a", "mid"]))
    assert out.column("ts").to_pylist() == [5, 5, 7, 7, 7]
    assert _lines(out) == ["b", "a", "zeta", "alpha", "mid"]


def test_only_true_duplicates_go_and_the_first_copy_stays_where_it_was():
    # a replica's copy of a tie run follows the original: copies are not adjacent
    out = sort_dedupe(
        _table(
            [3, 3, 3, 3, 3, 3, 4, 3],
            ["c", "a", "b", "c", "a", "b", "c", "d"],
            [[("k", "1")], None, None, [("k", "2")], None, None, None, None],
        )
    )
    assert out.column("ts").to_pylist() == [3, 3, 3, 3, 4]
    assert _lines(out) == ["c", "a", "b", "d", "c"]
    assert out.column("metadata").to_pylist()[0] == [("k", "1")]  # the first copy's metadata


def test_same_line_at_other_timestamps_is_kept():
    out = sort_dedupe(_table([1, 2, 2, 1], ["x", "x", "y", "x"]))
    assert list(zip(out.column("ts").to_pylist(), _lines(out))) == [(1, "x"), (2, "x"), (2, "y")]


def test_large_random_input_matches_a_stable_first_copy_reference():
    rng = np.random.default_rng(7)
    ts = rng.integers(0, 50, 5000)
    lines = [f"l{v}" for v in rng.integers(0, 30, 5000)]
    out = sort_dedupe(_table(ts.tolist(), lines))
    seen, expected = set(), []
    for i in np.argsort(ts, kind="stable"):
        key = (int(ts[i]), lines[i])
        if key not in seen:
            seen.add(key)
            expected.append(key)
    assert list(zip(out.column("ts").to_pylist(), _lines(out))) == expected


def test_head_block_seals_ties_in_push_order_across_appends():
    head = HeadBlock()
    head.append_batch(entries_batch([10, 10, 5], ["second", "first?", "early"], None), 5, 10, 17)
    head.append_batch(entries_batch([10, 10], ["b-later", "a-last"], None), 10, 10, 13)
    assert _lines(head.table()) == ["second", "first?", "early", "b-later", "a-last"]  # as pushed
    chunk = head.seal()
    assert _lines(chunk.table) == ["early", "second", "first?", "b-later", "a-last"]
    assert (chunk.min_ts, chunk.max_ts) == (5, 10)


def test_chunk_round_trip_keeps_tie_order_across_blocks():
    n = 3000
    ts = [1_000] * n + [2_000] * n
    lines = [f"{'z' if i % 2 else 'a'}-{n - i:05d}" for i in range(2 * n)]  # text order != push order
    table = sort_dedupe(_table(ts, lines))
    data = encode_chunk(table, block_bytes=4096)
    assert pa.ipc.open_file(pa.BufferReader(data)).num_record_batches > 5  # tie runs span blocks
    assert decode_chunk(data).line.to_pylist() == lines
    assert decode_chunk(data, 2_000, 2_001).line.to_pylist() == lines[n:]


def test_seal_stamps_increase_strictly():
    stamps = [next_seal_ns() for _ in range(1000)]
    assert all(b > a for a, b in pairwise(stamps))
