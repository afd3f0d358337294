"""The ingesters' copies of chunks the querier also read from the store.

For a while after a flush (the ingesters' retain period) a stream's flushed chunks come back
twice: decoded from the store and, as the same rows in the same order, at the start of the
ingester's answer (its retained chunks, then newer sealed chunks and the head). Merging both
made every row a timestamp tie that de-duplication sorted by line; dropping the ingester's copy
first leaves what de-duplication would have kept (it keeps the first copy, the store's) with
the rest still in order.
"""

from __future__ import annotations

import pyarrow as pa


def without_flushed_copies(flushed: list[pa.Table], fresh: list[pa.Table]) -> list[pa.Table]:
    """`fresh` (one table per ingester answer) without each table's leading rows that repeat,
    row for row, the last of the `flushed` tables (the store's, in seal order)."""
    if not flushed or not fresh:
        return fresh
    starts = [_first_ts(table) for table in flushed]
    out = []
    for table in fresh:
        rest = _after_copy(flushed, starts, table)
        if rest.num_rows:
            out.append(rest)
    return out


def _first_ts(table: pa.Table) -> int | None:
    return table.column("ts")[0].as_py() if table.num_rows else None


def _after_copy(flushed: list[pa.Table], starts: list[int | None], table: pa.Table) -> pa.Table:
    first = _first_ts(table)
    if first is None:
        return table
    for position, start in enumerate(starts):
        if start != first:
            continue
        copied = flushed[position:]
        rows = sum(part.num_rows for part in copied)
        if rows <= table.num_rows and _same_rows(copied, table.slice(0, rows)):
            return table.slice(rows)
    return table


def _same_rows(parts: list[pa.Table], table: pa.Table) -> bool:
    whole = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
    return all(whole.column(name).equals(table.column(name)) for name in ("ts", "line", "metadata"))
