"""Validation of column-wise streams: whole-stream checks with C-level passes.

A stream whose entries all pass (the common case) is checked with min/max/len passes
over its columns; a stream with any failing entry, or with structured metadata, goes
through the per-entry `validate_push`, which owns the reference's messages.
"""

from __future__ import annotations

from svclog.distributor.validate import ValidationLimits, ValidationReport, _check_labels, validate_push
from svclog.model import ColumnStream, Labels, StreamColumns


def _entries_surely_valid(stream: ColumnStream, limits: ValidationLimits, oldest: int | None, newest: int) -> bool:
    if stream.has_metadata():
        return False
    low, high = stream.ts_bounds()
    if (oldest is not None and low < oldest) or high > newest:
        return False
    return not limits.max_line_size or stream.fits_line_size(limits.max_line_size)


def validate_columns(
    streams: list[ColumnStream], limits: ValidationLimits, now_ns: int
) -> tuple[list[ColumnStream], ValidationReport]:
    """(accepted streams merged by label set, report of what was refused)."""
    oldest = now_ns - limits.reject_old_samples_max_age_ns if limits.reject_old_samples else None
    newest = now_ns + limits.creation_grace_period_ns
    fast: list[ColumnStream] = []
    slow = []
    for stream in streams:
        if not len(stream):
            continue
        clean = (
            not any(v == "" for _, v in stream.labels) and _check_labels(stream.labels, stream.labels, limits) is None
        )
        if clean and _entries_surely_valid(stream, limits, oldest, newest):
            fast.append(stream)
        else:
            slow.append(stream.to_push())
    report = validate_push(slow, limits, now_ns) if slow else ValidationReport([], [], 0, 0)
    merged: dict[Labels, ColumnStream] = {}
    for stream in fast + [StreamColumns.from_push(s) for s in report.accepted]:
        if stream.labels in merged:
            merged[stream.labels] = merged[stream.labels].concat(stream)
        else:
            merged[stream.labels] = stream
    return list(merged.values()), report
