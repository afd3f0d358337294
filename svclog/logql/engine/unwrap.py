"""`| unwrap [conversion(]label[)]`: label values to floats, conversion errors as `__error__`.

Conversion runs once per distinct value (dictionary encoding), not per entry.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from svclog.logql import ast
from svclog.logql.engine import stages_bridge as sb
from svclog.logql.stages.batch import LogBatch
from svclog.model import NS, parse_bytes, parse_go_duration

SAMPLE_EXTRACTION_ERR = "SampleExtractionErr"
_GO_FLOAT = re.compile(r"^[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|nan)$", re.IGNORECASE)


class ConversionError(ValueError):
    """Carries the reference's error text for `__error_details__`."""


def parse_go_float(text: str) -> float:
    """Go strconv.ParseFloat(text, 64) for the decimal forms (no '_' separators, no hex)."""
    if not _GO_FLOAT.match(text):
        raise ConversionError(f'strconv.ParseFloat: parsing "{text}": invalid syntax')
    value = float(text)
    if math.isinf(value) and "inf" not in text.lower():
        raise ConversionError(f'strconv.ParseFloat: parsing "{text}": value out of range')
    return value


def _duration_seconds(text: str) -> float:
    try:
        return parse_go_duration(text) / NS
    except ValueError:
        raise ConversionError(f'time: invalid duration "{text}"') from None


def _bytes(text: str) -> float:
    try:
        return float(parse_bytes(text))
    except ValueError:
        raise ConversionError(f'strconv.ParseFloat: parsing "{text}": invalid syntax') from None


CONVERTERS: dict[str, Callable[[str], float]] = {
    "": parse_go_float,
    "duration": _duration_seconds,
    "duration_seconds": _duration_seconds,
    "bytes": _bytes,
}


def convert_column(column: pa.Array, conversion: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(values, error index per entry (-1: none), error messages) for a nullable string column."""
    convert = CONVERTERS[conversion]
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    column = pc.fill_null(column.cast(pa.string()), "")
    encoded = pc.dictionary_encode(column)
    words = encoded.dictionary.to_pylist()
    word_values = np.zeros(len(words))
    word_errors = np.full(len(words), -1, dtype=np.int64)
    messages: list[str] = []
    for i, word in enumerate(words):
        try:
            word_values[i] = convert(word)
        except ConversionError as err:
            word_errors[i] = len(messages)
            messages.append(str(err))
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return word_values[codes], word_errors[codes], messages


def unwrap_values(batch: LogBatch, unwrap: ast.Unwrap) -> tuple[np.ndarray, LogBatch]:
    """Values of the unwrapped label; failing entries get `__error__`; the label leaves the series."""
    values, errors, messages = convert_column(batch.label(unwrap.label), unwrap.conversion)
    failed = errors >= 0
    if failed.any():
        _set_errors(batch, failed, errors, messages)
    batch.drop_label(unwrap.label)
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
