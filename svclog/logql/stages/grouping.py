"""Split a processed batch into result series: one per distinct effective label set.

An entry's labels are the batch's stream labels plus its non-null per-entry labels.
Empty values stay (the reference reports `--keep-empty` labels as `name=""`); null
means the entry does not carry the label at all.

`group_by_categories` does the same for the categorize-labels encoding, where each
entry's labels are split into stream labels, structured metadata and parsed labels.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from svclog.logql.stages.batch import ERROR_DETAILS_LABEL, ERROR_LABEL, LogBatch
from svclog.model import Labels

# Always reported as parsed, as the reference's labels builder files them.
_PARSED_ALWAYS = frozenset({ERROR_LABEL, ERROR_DETAILS_LABEL})


class CategorizedLabels(NamedTuple):
    """An entry's labels in the reference's three categories (sorts stream first)."""

    stream: Labels
    structured_metadata: Labels
    parsed: Labels


def group_by_labels(batch: LogBatch) -> list[tuple[Labels, pa.Array]]:
    """Distinct label sets of the entries and, for each, the int64 indices of its entries."""
    n = len(batch)
    if n == 0:
        return []
    columns = _present_columns(batch)
    if not columns:
        return [(batch.stream, pa.array(np.arange(n, dtype=np.int64)))]
    base = batch.stream.to_dict()
    out = []
    for values, _, indices in _groups(columns, []):
        labels = dict(base)
        labels.update((name, value) for name, value in values.items() if value is not None)
        out.append((Labels(labels.items()), pa.array(indices)))
    return out


def group_by_categories(batch: LogBatch) -> list[tuple[CategorizedLabels, pa.Array]]:
    """Like `group_by_labels`, each group's labels split into the three categories.

    A column in `parsed_rows` is parsed on some entries only, so its per-entry flag is
    part of the grouping key.
    """
    n = len(batch)
    if n == 0:
        return []
    columns = _present_columns(batch)
    if not columns:
        return [(CategorizedLabels(batch.stream, Labels(), Labels()), pa.array(np.arange(n, dtype=np.int64)))]
    flags = [(name, rows) for name, rows in sorted(batch.parsed_rows.items()) if any(name == col for col, _ in columns)]
    out = []
    for values, parsed_here, indices in _groups(columns, flags):
        stream = batch.stream.to_dict()
        metadata: dict[str, str] = {}
        parsed: dict[str, str] = {}
        for name, value in values.items():
            if value is None:
                continue
            if name in _PARSED_ALWAYS or (name in batch.parsed and parsed_here.get(name, True)):
                parsed[name] = value
            elif name in batch.metadata_names:
                metadata[name] = value
            else:  # a stream label a stage turned into a per-entry column (drop with a matcher)
                stream[name] = value
        key = CategorizedLabels(Labels(stream.items()), Labels(metadata.items()), Labels(parsed.items()))
        out.append((key, pa.array(indices)))
    return out


def _present_columns(batch: LogBatch) -> list[tuple[str, pa.Array]]:
    n = len(batch)
    return [(name, arr) for name, arr in sorted(batch.labels.items()) if arr.null_count < n]


def _groups(
    columns: list[tuple[str, pa.Array]], flags: list[tuple[str, pa.Array]]
) -> Iterator[tuple[dict[str, Any], dict[str, bool], np.ndarray]]:
    """Yield ({name: value or None}, {flag name: bool}, int64 indices) per distinct row.

    Every column is dictionary-encoded with null as code -1, so "absent" is its own value;
    flag columns (a bool per entry) are part of the key too.
    """
    n = len(columns[0][1])
    codes = np.empty((n, len(columns) + len(flags)), dtype=np.int64)
    dictionaries = []
    for j, (_, arr) in enumerate(columns):
        encoded = pc.dictionary_encode(arr)
        codes[:, j] = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False)
        dictionaries.append(encoded.dictionary.to_pylist())
    for j, (_, rows) in enumerate(flags, start=len(columns)):
        codes[:, j] = np.asarray(pc.fill_null(rows, False).to_numpy(zero_copy_only=False), dtype=np.int64)
    keys, inverse = _unique_rows(codes)
    order = np.argsort(inverse, kind="stable")
    bounds = np.cumsum(np.bincount(inverse, minlength=len(keys)))[:-1]
    for key, indices in zip(keys, np.split(order, bounds)):
        values: dict[str, Any] = {
            name: (dictionaries[j][code] if code >= 0 else None)
            for j, ((name, _), code) in enumerate(zip(columns, key))
        }
        flagged = {name: bool(flag) for (name, _), flag in zip(flags, key[len(columns) :])}
        yield values, flagged, indices.astype(np.int64)


def _unique_rows(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(codes, axis=0, return_inverse=True): the distinct rows in order, and each row's.

    Codes are -1 or more: a row packs into one int64 in mixed radix (first column most
    significant, so the order is the rows'), and a 1-D unique is ~30x faster than the row-wise
    one, which sorts rows as opaque records holding the GIL."""
    radixes = (codes.max(axis=0, initial=-1) + 2).tolist()
    if float(np.prod(np.asarray(radixes, dtype=np.float64))) >= 2.0**62:
        keys, inverse = np.unique(codes, axis=0, return_inverse=True)
        return keys, inverse.reshape(-1)
    packed = np.zeros(len(codes), dtype=np.int64)
    for j, radix in enumerate(radixes):
        packed = packed * radix + (codes[:, j] + 1)
    distinct, inverse = np.unique(packed, return_inverse=True)
    keys = np.empty((len(distinct), len(radixes)), dtype=np.int64)
    rest = distinct
    for j in range(len(radixes) - 1, -1, -1):
        rest, digit = np.divmod(rest, radixes[j])
        keys[:, j] = digit - 1
    return keys, inverse.reshape(-1)
