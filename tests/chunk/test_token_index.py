"""The token index never hides a line a filter keeps, and does rule out blocks that cannot match."""

import random
import re

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from svclog.chunk import token_index as ti
from svclog.chunk.format import BlockScan, decode_chunk, encode_chunk
from svclog.chunk.pushdown import apply_line_filters, block_probe
from svclog.logql.parser import parse
from svclog.logql.source import METADATA_TYPE

# token bytes, separators and multi-byte characters, so tokens of every length and edge occur
TEXT = st.text(alphabet=st.sampled_from(list('abcdef0123456789-_ =:./"{}') + ["é", "日", "\t"]), max_size=80)


def _table(lines: list[str], metadata: list | None = None) -> pa.Table:
    return pa.table(
        {
            "ts": pa.array(range(len(lines)), pa.int64()),
            "line": pa.array(lines, pa.string()),
            "metadata": pa.array(metadata or [None] * len(lines), METADATA_TYPE),
        }
    )


def _hex(rng: random.Random, n: int = 32) -> str:
    return f"{rng.getrandbits(4 * n):0{n}x}"


@given(st.lists(TEXT, min_size=1, max_size=6), st.data())
@settings(max_examples=300, deadline=None)
def test_keys_of_any_substring_are_among_its_lines_keys(lines, data):
    line = data.draw(st.sampled_from(lines))
    start = data.draw(st.integers(0, len(line)))
    needle = line[start : data.draw(st.integers(start, len(line)))]
    keys = ti.line_keys(pa.array(lines))
    assert np.isin(ti.needle_keys(needle), keys).all()
    assert ti.filter_has_all(ti.build_filter(keys), ti.needle_keys(needle))


def test_short_pieces_decide_nothing_and_long_ids_do():
    assert len(ti.needle_keys("level=error msg")) == 0  # every piece is shorter than a window
    assert len(ti.needle_keys("0123456789abcdef0123")) > 0
    assert len(ti.needle_keys("123e4567-e89b-12d3-a456-426614174000")) > 0  # a UUID is one token


def test_tokens_end_at_the_end_of_a_line():
    first, second = "x" * 10 + "0123456789", "abcdefghij" + "y" * 10
    together = ti.line_keys(pa.array([first, second]))
    apart = np.union1d(ti.line_keys(pa.array([first])), ti.line_keys(pa.array([second])))
    assert together.tolist() == apart.tolist()
    assert len(np.setdiff1d(ti.line_keys(pa.array([first + second])), apart)) > 0


def test_the_filter_has_every_key_and_rules_out_most_others():
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 2**64 - 1, 5000, dtype=np.uint64)
    words = ti.build_filter(keys)
    assert all(ti.filter_has_all(words, keys[i : i + 1]) for i in range(len(keys)))
    others = rng.integers(0, 2**64 - 1, 5000, dtype=np.uint64)
    rate = np.mean([ti.filter_has_all(words, others[i : i + 1]) for i in range(len(others))])
    assert rate < 0.2  # ~13% at 5 bits per key
    assert not ti.filter_has_all(ti.build_filter(np.zeros(0, np.uint64)), keys[:1])


def test_metadata_pairs_are_keys():
    md = pa.array([[("trace_id", "abc"), ("k", "")], None], METADATA_TYPE)
    keys = ti.metadata_keys(md)
    assert np.isin(ti.metadata_pair_key("trace_id", "abc"), keys).all()
    assert np.isin(ti.metadata_pair_key("k", ""), keys).all()
    assert not np.isin(ti.metadata_pair_key("trace_id", "abd"), keys).any()
    sliced = pa.array([[("a", "1")], [("b", "2")], [("c", "3")]], METADATA_TYPE).slice(1, 1)  # as a block is
    assert ti.metadata_keys(sliced).tolist() == ti.metadata_pair_key("b", "2").tolist()


def _filters(query: str) -> tuple:
    return tuple(parse('{a="b"} ' + query).stages)


def _read(data: bytes, filters: tuple, metadata_equals=(), use_index: bool = True) -> tuple[list, BlockScan]:
    probe = block_probe(filters, metadata_equals) if use_index else None
    scan = BlockScan()
    chunk = decode_chunk(data, may_match=probe.may_match if probe else None, scan=scan)
    table = apply_line_filters(pa.table({"ts": chunk.ts, "line": chunk.line, "metadata": chunk.metadata}), filters)
    if metadata_equals:
        rows = [
            row
            for row in table.to_pylist()
            if all(dict(row["metadata"] or []).get(k, "") == v for k, v in metadata_equals)
        ]
    else:
        rows = table.to_pylist()
    return [(r["ts"], r["line"]) for r in rows], scan


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@given(st.integers(0, 2**32), st.data())
@settings(max_examples=60, deadline=None)
def test_filtered_answers_are_the_same_with_and_without_the_index(seed, data):
    rng = random.Random(seed)
    ids = [_hex(rng, rng.choice((16, 20, 32))) for _ in range(40)]
    lines, metadata = [], []
    for i in range(300):
        trace = rng.choice(ids)
        lines.append(
            rng.choice(
                [
                    f'ts={i} level=info trace_id={trace} msg="ok"',
                    f'{{"trace":"{trace}","n":{i}}}',
                    f"{trace[: rng.randrange(1, len(trace))]}-{_hex(rng, 8)} näive {i}",
                    data.draw(TEXT),
                ]
            )
        )
        metadata.append([("trace_id", trace)] if rng.random() < 0.5 else None)
    blob = encode_chunk(_table(lines, metadata), block_bytes=rng.choice((64, 512, 4096)))
    present = rng.choice(lines)
    start = rng.randrange(len(present) + 1)
    needle = present[start : start + rng.randrange(40)]
    absent = _hex(rng)
    queries = [
        f"|= {_quote(needle)}",
        f"|= {_quote(absent)}",
        f"|= {_quote(absent)} or {_quote(needle)}",
        f"|= {_quote(rng.choice(ids))} |= {_quote(needle)}",
        f"|~ {_quote('trace_id=' + rng.choice(ids))}",
        f"|~ {_quote(rng.choice(ids)[:20] + '.*n')}",
        f"!= {_quote(rng.choice(ids))}",
    ]
    for query in queries:
        filters = _filters(query)
        assert _read(blob, filters)[0] == _read(blob, filters, use_index=False)[0], query
    wanted = (("trace_id", rng.choice(ids)),)
    assert _read(blob, (), wanted)[0] == _read(blob, (), wanted, use_index=False)[0]


def test_blocks_without_the_needle_are_not_decoded():
    rng = random.Random(7)
    lines = [
        f'ts={i} level=info caller=handler.go:142 msg="request completed" method=GET path=/api/v1/users/{i} '
        f"status=200 trace_id={_hex(rng)}"
        for i in range(4000)
    ]
    blob = encode_chunk(_table(lines), block_bytes=32768)
    needle = lines[1234].split("trace_id=")[1]
    rows, scan = _read(blob, _filters(f"|= {_quote(needle)}"))
    assert rows == [(1234, lines[1234])]
    assert scan.blocks == scan.indexed > 10
    assert scan.skipped >= scan.blocks - 2  # not the block holding it, rarely a false positive
    _, scan = _read(blob, _filters(f"|= {_quote(_hex(rng))}"))
    assert scan.chunks_skipped == 1 or scan.skipped >= scan.blocks - 1


def test_chunks_written_without_an_index_read_every_block():
    lines = [f"trace_id={i:032x}" for i in range(2000)]
    blob = encode_chunk(_table(lines), block_bytes=4096, token_index=False)
    rows, scan = _read(blob, _filters(f"|= {_quote(f'{5:032x}')}"))
    assert rows == [(5, lines[5])]
    assert scan.indexed == scan.skipped == 0 and scan.blocks > 1


def test_index_size_is_capped_by_the_raw_line_bytes():
    rng = random.Random(3)
    lines = [
        f'ts=2024-01-01T00:00:{i % 60:02d}.{i:06d}Z level=info caller=handler.go:142 msg="request '
        f'completed" status=200 bytes={rng.randrange(80, 60000)} trace_id={_hex(rng)}'
        for i in range(20000)
    ]
    with_index = encode_chunk(_table(lines))
    without = encode_chunk(_table(lines), token_index=False)
    raw = sum(map(len, lines))
    assert 0 < len(with_index) - len(without) <= raw * ti.MAX_SHARE + 1024
    needle = lines[777].rsplit("=", 1)[1]
    rows, scan = _read(with_index, _filters(f"|= {_quote(needle)}"))
    assert rows == [(777, lines[777])] and scan.skipped >= scan.blocks * 0.8


def _keys_one_window_at_a_time(lines: list[str]) -> np.ndarray:
    """The keys as the module doc defines them, window by window in Python: the reference the
    vectorised build (which hashes each gram once and never calls np.unique) must equal."""
    found = set()
    for line in lines:
        raw = line.encode()
        for token in (m.group() for m in re.finditer(rb"[0-9A-Za-z_\-\x80-\xff]+", raw)):
            for w in range(len(token) - ti.WINDOW + 1):
                grams = [
                    int.from_bytes(token[w + g : w + g + ti.GRAM], "little") for g in range(ti.WINDOW - ti.GRAM + 1)
                ]
                low = ti._mix(np.array(grams, dtype=np.uint64), ti._LINE_SEED).min()
                found.add(int(ti._mix(np.array([low], dtype=np.uint64), ti._KEY_SEED)[0]))
    return np.array(sorted(found), dtype=np.uint64)


@given(st.lists(TEXT, min_size=1, max_size=6))
@settings(max_examples=200, deadline=None)
def test_line_keys_are_every_windows_minimum(lines):
    assert ti.line_keys(pa.array(lines)).tolist() == _keys_one_window_at_a_time(lines).tolist()


@given(st.lists(st.integers(0, 2**64 - 1), max_size=50))
def test_sorted_unique_is_numpys_unique(values):
    array = np.array(values, dtype=np.uint64)
    assert ti.sorted_unique(array).tolist() == np.unique(array).tolist()
