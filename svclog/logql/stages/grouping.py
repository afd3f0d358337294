"""Split a processed batch into result series: one per distinct effective label set.

An entry's labels are the batch's stream labels plus its non-null per-entry labels.
Empty values stay (the reference reports `--keep-empty` labels as `name=""`); null
means the entry does not carry the label at all.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from svclog.logql.stages.batch import LogBatch
from svclog.model import Labels


def group_by_labels(batch: LogBatch) -> list[tuple[Labels, pa.Array]]:
    """Distinct label sets of the entries and, for each, the int64 indices of its entries."""
    n = len(batch)
    if n == 0:
        return []
    columns = [(name, arr) for name, arr in sorted(batch.labels.items()) if arr.null_count < n]
    if not columns:
        return [(batch.stream, pa.array(np.arange(n, dtype=np.int64)))]
    # Dictionary-encode every column; null gets code -1 so "absent" is its own value.
    codes = np.empty((n, len(columns)), dtype=np.int64)
    dictionaries = []
    for j, (_, arr) in enumerate(columns):
        encoded = pc.dictionary_encode(arr)
        codes[:, j] = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False)
        dictionaries.append(encoded.dictionary.to_pylist())
    keys, inverse = np.unique(codes, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    bounds = np.cumsum(np.bincount(inverse, minlength=len(keys)))[:-1]
    base = batch.stream.to_dict()
    out = []
    for key, indices in zip(keys, np.split(order, bounds)):
        labels = dict(base)
        for j, code in enumerate(key):
            if code >= 0:
                labels[columns[j][0]] = dictionaries[j][code]
        out.append((Labels(labels.items()), pa.array(indices.astype(np.int64))))
    return out
