"""String -> number conversions with the reference's acceptance rules and error texts.

Used by numeric/duration/bytes label filters and by the engine's `unwrap`. Each
function takes a string array and returns `(values, errors)`: float64 values (null
where the input is null or invalid) and the Go error message per invalid entry.
Numbers are validated with an RE2 kernel and cast with Arrow; durations and byte
sizes are computed once per distinct string (dictionary encoding), since their
grammar has no Arrow kernel.
"""
from __future__ import annotations

import math
import re

import pyarrow as pa
import pyarrow.compute as pc

from svclog.model import go_quote, parse_go_duration

# strconv.ParseFloat's decimal syntax plus its inf/infinity/nan spellings (no hex floats).
_GO_FLOAT = r"^(?:[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?i:inf|infinity)|(?i:nan))$"
_GO_INF = r"^[+-]?(?i:inf|infinity)$"


def parse_float_values(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """strconv.ParseFloat over an array."""
    arr = arr.cast(pa.string())
    valid = pc.fill_null(pc.match_substring_regex(arr, _GO_FLOAT), False)
    values = pc.cast(pc.if_else(valid, arr, pa.scalar(None, pa.string())), pa.float64())
    # Go reports overflow to +-Inf as an error ("value out of range").
    overflow = pc.and_(pc.fill_null(pc.is_inf(values), False),
                       pc.invert(pc.fill_null(pc.match_substring_regex(arr, _GO_INF), False)))
    bad_syntax = pc.and_(pc.is_valid(arr), pc.invert(valid))
    errors = _messages(arr, bad_syntax, lambda s: f"strconv.ParseFloat: parsing {go_quote(s)}: invalid syntax")
    if pc.any(overflow).as_py():
        over = _messages(arr, overflow, lambda s: f"strconv.ParseFloat: parsing {go_quote(s)}: value out of range")
        errors = pc.coalesce(errors, over)
        values = pc.if_else(overflow, pa.scalar(None, pa.float64()), values)
    return values, errors


def parse_duration_values(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """time.ParseDuration over an array; values in seconds (float64)."""
    return _per_distinct(arr, lambda s: go_parse_duration(s) / 1e9)


def parse_duration_ns_values(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """time.ParseDuration over an array; values in integer nanoseconds stored as float64."""
    return _per_distinct(arr, lambda s: float(go_parse_duration(s)))


def parse_bytes_values(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """go-humanize ParseBytes over an array; values in bytes (float64 of a uint64)."""
    return _per_distinct(arr, lambda s: float(humanize_parse_bytes(s)))


def _messages(arr: pa.Array, mask: pa.Array, fmt) -> pa.Array:
    if not pc.any(mask).as_py():
        return pa.nulls(len(arr), pa.string())
    texts = arr.to_pylist()
    flags = mask.to_pylist()
    return pa.array([fmt(t) if f else None for t, f in zip(texts, flags)], pa.string())


def _per_distinct(arr: pa.Array, convert) -> tuple[pa.Array, pa.Array]:
    # One Python conversion per distinct string, then a vectorised take back to entries.
    encoded = pc.dictionary_encode(arr.cast(pa.string()))
    values: list[float | None] = []
    errors: list[str | None] = []
    for text in encoded.dictionary.to_pylist():
        try:
            values.append(convert(text))
            errors.append(None)
        except ValueError as err:
            values.append(None)
            errors.append(str(err))
    idx = encoded.indices
    return (pc.take(pa.array(values, pa.float64()), idx), pc.take(pa.array(errors, pa.string()), idx))


# ---------------------------------------------------------------- Go time.ParseDuration

# Go time.ParseDuration lives in the leaf model; the unwrap converters use it.
go_parse_duration = parse_go_duration


# ---------------------------------------------------------------- go-humanize ParseBytes

_BYTE_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3,
    "t": 1000**4, "tb": 1000**4, "p": 1000**5, "pb": 1000**5, "e": 1000**6, "eb": 1000**6,
    "ki": 1024, "kib": 1024, "mi": 1024**2, "mib": 1024**2, "gi": 1024**3, "gib": 1024**3,
    "ti": 1024**4, "tib": 1024**4, "pi": 1024**5, "pib": 1024**5, "ei": 1024**6, "eib": 1024**6,
}
_LEADING_NUMBER = re.compile(r"[0-9.,]*")
_DECIMAL = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")


def humanize_parse_bytes(text: str) -> int:
    """Bytes; raises ValueError with go-humanize's message on invalid input."""
    head = _LEADING_NUMBER.match(text).group(0)
    number = head.replace(",", "")
    if not _DECIMAL.match(number):
        raise ValueError(f"strconv.ParseFloat: parsing {go_quote(number)}: invalid syntax")
    unit = text[len(head):].strip().lower()
    if unit not in _BYTE_UNITS:
        raise ValueError(f"unhandled size name: {unit}")
    value = float(number) * _BYTE_UNITS[unit]
    if value >= 2.0**64 or math.isinf(value):
        raise ValueError(f"too large: {text}")
    return int(value)
