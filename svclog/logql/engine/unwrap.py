"""`| unwrap [conversion(]label[)]`: label values to floats, conversion errors as `__error__`.

Conversion runs once per distinct value (dictionary encoding), not per entry.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from svclog.logql import ast
from svclog.logql.engine import stages_bridge as sb
from svclog.logql.stages import convert
from svclog.logql.stages.batch import LogBatch

SAMPLE_EXTRACTION_ERR = "SampleExtractionErr"

# The reference's converters: strconv.ParseFloat, time.ParseDuration (in seconds) and
# go-humanize ParseBytes, with their error texts
CONVERTERS: dict[str, Callable[[pa.Array], tuple[pa.Array, pa.Array]]] = {
    "": convert.parse_float_values,
    "duration": convert.parse_duration_values,
    "duration_seconds": convert.parse_duration_values,
    "bytes": convert.parse_bytes_values,
}


def convert_column(column: pa.Array, conversion: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(values, error index per entry (-1: none), error messages) for a nullable string column
    (a null converts as "" and fails; `unwrap_values` drops such entries before converting)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    column = pc.fill_null(column.cast(pa.string()), "")
    values, errors = CONVERTERS[conversion](column)
    failed = errors.is_valid()
    values = pc.fill_null(values, 0.0).to_numpy(zero_copy_only=False).astype(np.float64)
    if not pc.any(failed).as_py():
        return values, np.full(len(column), -1, dtype=np.int64), []
    encoded = pc.dictionary_encode(errors)
    codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    return values, codes, encoded.dictionary.to_pylist()


def unwrap_values(batch: LogBatch, unwrap: ast.Unwrap) -> tuple[np.ndarray, LogBatch]:
    """Values of the unwrapped label; failing entries get `__error__`; the label leaves the series.

    An entry without the label (or with it empty) makes no sample and no error, as in the
    reference: only a value that is there and does not convert fails."""
    original = batch.label(unwrap.label)
    present = pc.fill_null(pc.not_equal(original, ""), False)
    if not pc.all(present).as_py():
        batch = batch.filter(present)
        original = batch.label(unwrap.label)
    values, errors, messages = convert_column(original, unwrap.conversion)
    failed = errors >= 0
    if failed.any():
        _set_errors(batch, failed, errors, messages)
    batch.drop_label(unwrap.label)
    if failed.any():
        # an entry whose conversion failed keeps every label, the unwrapped one included (the
        # reference applies no grouping to an erroring sample, so its error names that value)
        batch.set_label(unwrap.label, pc.if_else(pa.array(failed), original, pa.nulls(len(original), pa.string())))
    for expr in unwrap.post_filters:
        mask = sb.label_filter_mask(expr, batch)
        keep = np.asarray(pc.fill_null(mask, False).to_numpy(zero_copy_only=False), dtype=bool)
        batch = batch.filter(pa.array(keep))
        values = values[keep]
    return values, batch


def _set_errors(batch: LogBatch, failed: np.ndarray, errors: np.ndarray, messages: list[str]) -> None:
    mask = pa.array(failed)
    details = pa.array(messages, pa.string()).take(pa.array(np.maximum(errors, 0)))
    old_err = batch.label("__error__")
    old_details = batch.label("__error_details__")
    batch.set_label("__error__", pc.if_else(mask, pa.scalar(SAMPLE_EXTRACTION_ERR), old_err))
    batch.set_label("__error_details__", pc.if_else(mask, details, old_details))
