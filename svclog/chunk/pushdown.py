"""Filters pushed down to where the data is (ingesters, freshly read chunks).

The engine re-applies every filter, so dropping entries early is only an optimisation:
fewer lines cross process boundaries and go through merging and sorting. `BlockProbe`
goes one step earlier: from the same filters it derives token-index keys (token_index.py)
that a chunk block must hold to have any line the filters keep, so blocks without them
are never decompressed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from svclog.chunk.regex_literals import required_literals
from svclog.chunk.token_index import KeySet, TokenIndex, metadata_pair_key, needle_keys
from svclog.logql.stages.line_filter import line_filter_mask


def apply_line_filters(table: pa.Table, line_filters: tuple) -> pa.Table:
    if not line_filters or table.num_rows == 0:
        return table
    lines = table.column("line")
    if lines.num_chunks > _FILTER_CHUNKS:  # many small ones (a head's pushes): one kernel call each filter
        return table.filter(_lines_mask(lines.combine_chunks(), line_filters))
    # a few large ones (a chunk's decoded blocks): filtered where they lie, not copied into one first
    return table.filter(pa.chunked_array([_lines_mask(chunk, line_filters) for chunk in lines.chunks], pa.bool_()))


# Above this many pieces a table's lines are joined before they are filtered
_FILTER_CHUNKS = 8


def _lines_mask(lines: pa.Array, line_filters: tuple) -> pa.Array:
    mask = None
    for node in line_filters:
        part = line_filter_mask(node, lines)
        mask = part if mask is None else pc.and_(mask, part)
    assert mask is not None
    return pc.fill_null(mask, False) if mask.null_count else mask


@dataclass(frozen=True)
class BlockProbe:
    """A block can hold a wanted line only if, for every clause, all the keys of at least one of
    the clause's alternatives may be in its filter (clauses are and-ed filters, alternatives the
    `or` operands of one filter)."""

    clauses: tuple[tuple[KeySet, ...], ...]
    # what it was built from (the filters and equalities): equal keys, equal answers
    key: object = field(default=None, compare=False)

    def may_match(self, index: TokenIndex) -> np.ndarray:
        """Per block of the chunk: could it hold a line the filters keep?"""
        possible = np.ones(len(index), dtype=bool)
        for clause in self.clauses:
            either = np.zeros(len(index), dtype=bool)
            for keys in clause:
                either |= index.may_hold(keys)
            possible &= either
        return possible


def block_probe(line_filters: tuple, metadata_equals: Iterable[tuple[str, str]] = ()) -> BlockProbe | None:
    """The probe for a select's leading line filters and the `name="value"` structured-metadata
    equalities every kept line must satisfy; None when none of them can rule a block out."""
    clauses = [clause for node in line_filters if (clause := _filter_clause(node)) is not None]
    # `name=""` also keeps lines without the entry, which the index cannot tell
    clauses.extend((KeySet.of(metadata_pair_key(name, value)),) for name, value in metadata_equals if value != "")
    return BlockProbe(tuple(clauses), (line_filters, tuple(metadata_equals))) if clauses else None


def _filter_clause(node) -> tuple[KeySet, ...] | None:
    """Keys per operand of a positive filter; None when some operand cannot be decided (a line
    matching it could be anywhere) or the filter keeps lines by what they lack (!=, !~)."""
    if node.op not in ("|=", "|~"):
        return None
    alternatives = []
    for value in node.values:
        if value.ip:
            return None
        needles = [value.value] if node.op == "|=" else required_literals(value.value)
        keys = np.unique(np.concatenate([needle_keys(text) for text in needles])) if needles else np.zeros(0)
        if len(keys) == 0:
            return None
        alternatives.append(KeySet.of(keys))
    return tuple(alternatives) if alternatives else None
