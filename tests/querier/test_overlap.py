import pyarrow as pa
import pytest

from svclog.chunk.format import CHUNK_SCHEMA
from svclog.chunk.head import sort_dedupe
from svclog.querier.overlap import without_flushed_copies


def _table(rows):
    ts, lines, md = zip(*rows) if rows else ((), (), ())
    return pa.Table.from_arrays(
        [pa.array(ts, pa.int64()), pa.array(lines, pa.string()), pa.array(md, CHUNK_SCHEMA.field("metadata").type)],
        schema=CHUNK_SCHEMA,
    )


def _merged(flushed, fresh):
    tables = flushed + fresh
    return sort_dedupe(pa.concat_tables(tables)) if tables else None


OLD = [(1, "a", None), (2, "b", None), (2, "b2", [("k", "v")])]
RETAINED = [(3, "c", None), (3, "c", None), (5, "d", None)]
NEWER = [(5, "d", None), (6, "e", None), (7, "f", [("k", "w")])]


@pytest.mark.parametrize(
    "flushed, fresh, left",
    [
        # the ingester still holds the flushed chunk, then newer rows: only the newer ones stay
        ([OLD, RETAINED], [RETAINED + NEWER], [NEWER]),
        ([OLD, RETAINED], [RETAINED], []),
        ([RETAINED], [RETAINED + NEWER, RETAINED + NEWER], [NEWER, NEWER]),  # two replicas' answers
        # not a copy of the store's last chunks: kept whole, de-duplication decides
        ([OLD, RETAINED], [OLD], [OLD]),
        ([OLD, RETAINED], [RETAINED[:2]], [RETAINED[:2]]),
        (
            [RETAINED],
            [[(3, "c", None), (3, "c", [("k", "v")]), (5, "d", None)]],
            [[(3, "c", None), (3, "c", [("k", "v")]), (5, "d", None)]],
        ),
        ([], [NEWER], [NEWER]),
        ([OLD], [], []),
    ],
)
def test_drops_only_the_copied_prefix_and_merges_the_same(flushed, fresh, left):
    flushed_t = [_table(rows) for rows in flushed]
    fresh_t = [_table(rows) for rows in fresh]
    kept = without_flushed_copies(flushed_t, fresh_t)
    assert [t.to_pylist() for t in kept] == [_table(rows).to_pylist() for rows in left]
    before, after = _merged(flushed_t, fresh_t), _merged(flushed_t, kept)
    assert (before is None and after is None) or before.to_pylist() == after.to_pylist()
