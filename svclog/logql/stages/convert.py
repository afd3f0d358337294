"""String -> number conversions with the reference's acceptance rules and error texts.

Used by numeric/duration/bytes label filters and by the engine's `unwrap`. Each
function takes a string array and returns `(values, errors)`: float64 values (null
where the input is null or invalid) and the Go error message per invalid entry.
Numbers are validated with an RE2 kernel and cast with Arrow; durations and byte
sizes are computed once per distinct string (dictionary encoding), since their
grammar has no Arrow kernel.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from svclog.gocompat.durations import parse_go_duration
from svclog.gocompat.humanize import parse_bytes as humanize_parse_bytes
from svclog.gocompat.strconv import parse_float as go_parse_float
from svclog.gocompat.strconv import quote as go_quote

__all__ = [
    "go_parse_float",
    "humanize_parse_bytes",
    "parse_bytes_values",
    "parse_duration_ns_values",
    "parse_duration_values",
    "parse_float_values",
]  # the first two: Go's own, for querier/detected.py

# strconv.ParseFloat's common decimal syntax plus its inf/infinity/nan spellings; the rest
# of Go's syntax (hex floats, `_` digit separators) goes through go_parse_float
_GO_FLOAT = r"^(?:[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?i:inf|infinity)|(?i:nan))$"
_GO_INF = r"^[+-]?(?i:inf|infinity)$"
_GO_FLOAT_RARE = r"[_xX]"


def parse_float_values(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """strconv.ParseFloat over an array."""
    arr = arr.cast(pa.string())
    valid = pc.fill_null(pc.match_substring_regex(arr, _GO_FLOAT), False)
    values = pc.cast(pc.if_else(valid, arr, pa.scalar(None, pa.string())), pa.float64())
    # Go reports overflow to +-Inf as an error ("value out of range").
    overflow = pc.and_(
        pc.fill_null(pc.is_inf(values), False), pc.invert(pc.fill_null(pc.match_substring_regex(arr, _GO_INF), False))
    )
    rare = pc.and_(pc.invert(valid), pc.fill_null(pc.match_substring_regex(arr, _GO_FLOAT_RARE), False))
    bad_syntax = pc.and_(pc.and_(pc.is_valid(arr), pc.invert(valid)), pc.invert(rare))
    errors = _messages(arr, bad_syntax, lambda s: f"strconv.ParseFloat: parsing {go_quote(s)}: invalid syntax")
    if pc.any(overflow).as_py():
        over = _messages(arr, overflow, lambda s: f"strconv.ParseFloat: parsing {go_quote(s)}: value out of range")
        errors = pc.coalesce(errors, over)
        values = pc.if_else(overflow, pa.scalar(None, pa.float64()), values)
    if pc.any(rare).as_py():
        rare_values, rare_errors = _per_distinct(arr.filter(rare), go_parse_float)
        values = pc.replace_with_mask(values, rare, rare_values)
        errors = pc.replace_with_mask(errors, rare, rare_errors)
    return values, errors


def parse_duration_values(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """time.ParseDuration over an array; values in seconds (float64)."""
    return _durations(arr, lambda ns: ns.astype(np.float64) / 1e9, lambda s: parse_go_duration(s) / 1e9)


def parse_duration_ns_values(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """time.ParseDuration over an array; values in integer nanoseconds stored as float64."""
    return _durations(arr, lambda ns: ns.astype(np.float64), lambda s: float(parse_go_duration(s)))


# One number and one unit, as nearly every logged duration is (`12.5ms`, `3s`): read straight
# from the string bytes with numpy. Go computes it as `whole * unit + int(frac * (unit / 10^k))`
# (float64 for the fraction), so the same float64 operations give the same nanoseconds; the
# digit limits keep every product exact. Anything else (several units, `0`, more digits,
# errors) is converted per distinct string.
_MAX_DIGITS = 15
_MAX_BYTES = 2 * _MAX_DIGITS + 5  # sign, dot, unit of up to 3 bytes
_SAFE_NS = 1 << 62  # whole * unit below this cannot overflow int64 once the fraction is added


# Logged durations repeat (the bench's 400k have 8.6k distinct strings): on a stream's column the
# numpy reader's ~25 passes over every entry cost more than a dictionary encoding (~40 ns an
# entry) and the passes over the distinct strings alone. In process, over the bench's logfmt
# lines a stream (~40k entries) at a time: 68 ms directly, 16 ms through the dictionary.
_DICTIONARY_MIN_ENTRIES = 2048
_DICTIONARY_MAX_SHARE = 0.5  # distinct strings per entry above which the dictionary does not pay


def _durations(
    arr: pa.Array, scale: Callable[[np.ndarray], np.ndarray], convert: Callable[[str], float]
) -> tuple[pa.Array, pa.Array]:
    arr = arr.cast(pa.string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if len(arr) >= _DICTIONARY_MIN_ENTRIES:
        encoded = pc.dictionary_encode(arr)
        if len(encoded.dictionary) <= _DICTIONARY_MAX_SHARE * len(arr):
            values, errors = _durations_of(encoded.dictionary, scale, convert)
            return pc.take(values, encoded.indices), pc.take(errors, encoded.indices)
    return _durations_of(arr, scale, convert)


def _durations_of(
    arr: pa.Array, scale: Callable[[np.ndarray], np.ndarray], convert: Callable[[str], float]
) -> tuple[pa.Array, pa.Array]:
    ns, done = _simple_durations_ns(arr)
    if not done.any():
        return _per_distinct(arr, convert)
    values = np.zeros(len(arr))
    values[done] = scale(ns[done])
    out_values = pa.array(values, mask=~done)
    out_errors = pa.nulls(len(arr), pa.string())
    if not done.all():
        left = np.flatnonzero(~done)
        rest_values, rest_errors = _per_distinct(arr.take(left), convert)
        mask = pa.array(~done)
        out_values = pc.replace_with_mask(out_values, mask, rest_values)
        out_errors = pc.replace_with_mask(out_errors, mask, rest_errors)
    return out_values, out_errors


def _simple_durations_ns(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(nanoseconds, read) per entry of a string array; `read` is false where the entry is not
    `[+-]digits[.digits]unit` within the limits (those are left to the exact parser)."""
    n = len(arr)
    _, offsets_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int32)[arr.offset : arr.offset + n + 1].astype(np.int64)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, dtype=np.uint8)
    lengths = np.diff(offsets)
    ok = (lengths >= 2) & (lengths <= _MAX_BYTES)
    if arr.null_count:
        ok &= np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if not ok.any() or len(data) == 0:
        return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    width = int(lengths[ok].max())
    lengths = np.where(ok, lengths, 0)
    cols = np.arange(width)
    # the rows' bytes column by column (0 past a row's end), one gather for all of them
    index = np.minimum(offsets[:-1] + cols[:, None], len(data) - 1)
    text = np.where(cols[:, None] < lengths, data[index], 0).astype(np.uint8)
    rows = np.arange(n)

    def back(k: int) -> np.ndarray:  # the k-th byte from each row's end (0 before its start)
        return np.where(lengths > k, text[np.maximum(lengths - 1 - k, 0), rows], 0)

    b1, b2, b3 = back(0), back(1), back(2)
    unit_ns = np.zeros(n, dtype=np.int64)
    unit_len = np.ones(n, dtype=np.int64)
    unit_ns[b1 == ord("h")] = 3600 * 10**9
    unit_ns[b1 == ord("m")] = 60 * 10**9
    is_s = b1 == ord("s")
    unit_ns[is_s] = 10**9
    for prefix, size in ((b"m", 1_000_000), (b"n", 1), (b"u", 1_000)):
        hit = is_s & (b2 == prefix[0])
        unit_ns[hit], unit_len[hit] = size, 2
    for micro in ("\u00b5".encode(), "\u03bc".encode()):  # µs and μs
        hit = is_s & (b3 == micro[0]) & (b2 == micro[1])
        unit_ns[hit], unit_len[hit] = 1_000, 3
    ok &= unit_ns > 0
    number_end = lengths - unit_len  # the number is the row's bytes [start, number_end)
    first = text[0]
    start = ((first == ord("+")) | (first == ord("-"))).astype(np.int64)
    whole = np.zeros(n, dtype=np.int64)
    frac = np.zeros(n, dtype=np.int64)
    whole_digits = np.zeros(n, dtype=np.int64)
    frac_digits = np.zeros(n, dtype=np.int64)
    dots = np.zeros(n, dtype=np.int64)
    for col in range(int(number_end[ok].max(initial=0))):  # one column of bytes at a time
        in_number = ok & (col >= start) & (col < number_end)
        value = text[col].astype(np.int64) - ord("0")
        digit = in_number & (value >= 0) & (value <= 9)
        dot = in_number & (value == ord(".") - ord("0"))
        ok &= ~in_number | digit | dot
        dots += dot
        in_whole, in_frac = digit & (dots == 0), digit & (dots > 0)
        whole = np.where(in_whole, whole * 10 + value, whole)
        frac = np.where(in_frac, frac * 10 + value, frac)
        whole_digits += in_whole
        frac_digits += in_frac
    ok &= (dots <= 1) & (whole_digits + frac_digits > 0)
    ok &= (whole_digits <= _MAX_DIGITS) & (frac_digits <= _MAX_DIGITS)
    ok &= whole <= _SAFE_NS // np.maximum(unit_ns, 1)
    with np.errstate(over="ignore", invalid="ignore"):
        ns = whole * unit_ns + np.trunc(
            frac.astype(np.float64) * (unit_ns.astype(np.float64) / 10.0**frac_digits)
        ).astype(np.int64)
    ns = np.where(first == ord("-"), -ns, ns)
    return np.where(ok, ns, 0), ok


def parse_bytes_values(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """go-humanize ParseBytes over an array; values in bytes (float64 of a uint64)."""
    return _per_distinct(arr, lambda s: float(humanize_parse_bytes(s)))


def _messages(arr: pa.Array, mask: pa.Array, fmt: Callable[[str], str]) -> pa.Array:
    if not pc.any(mask).as_py():
        return pa.nulls(len(arr), pa.string())
    texts = arr.to_pylist()
    flags = mask.to_pylist()
    return pa.array([fmt(t) if f else None for t, f in zip(texts, flags)], pa.string())


def _per_distinct(arr: pa.Array, convert: Callable[[str], float]) -> tuple[pa.Array, pa.Array]:
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
