"""Grouping a batch's entries by label set: the packed 1-D unique answers as the row-wise one."""

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from svclog.logql.stages.grouping import _unique_rows, group_by_labels
from tests.logql.stages.helpers import batch


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 6), min_size=1, max_size=4).flatmap(
        lambda radixes: st.tuples(
            st.just(radixes),
            st.lists(st.tuples(*(st.integers(-1, r - 2) for r in radixes)), min_size=1, max_size=40),
        )
    )
)
def test_packed_unique_matches_the_row_wise_unique(case):
    radixes, rows = case
    codes = np.asarray(rows, dtype=np.int64).reshape(len(rows), len(radixes))
    keys, inverse = _unique_rows(codes)
    want_keys, want_inverse = np.unique(codes, axis=0, return_inverse=True)
    assert keys.tolist() == want_keys.tolist()
    assert inverse.tolist() == want_inverse.reshape(-1).tolist()


def test_codes_too_large_to_pack_take_the_row_wise_unique():
    codes = np.asarray([[2**40, -1], [0, 2**40], [2**40, -1]], dtype=np.int64)
    keys, inverse = _unique_rows(codes)
    assert keys.tolist() == [[0, 2**40], [2**40, -1]] and inverse.tolist() == [1, 0, 1]


def test_entries_group_by_their_labels():
    """Groups come absent value first, then in the order values first appear (dictionary codes)."""
    b = batch("a", "b", "c", "d")
    b.set_label("level", pa.array(["warn", None, "info", "warn"]))
    groups = group_by_labels(b)
    assert [(dict(labels).get("level"), idx.to_pylist()) for labels, idx in groups] == [
        (None, [1]),
        ("warn", [0, 3]),
        ("info", [2]),
    ]
