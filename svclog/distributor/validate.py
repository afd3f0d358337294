"""Per-tenant validation of decoded push streams, with the reference's partial acceptance.

A stream whose labels are invalid is dropped whole; an entry that breaks a
limit is dropped alone. Everything else is accepted. The caller writes
`report.accepted` and, when `report.errors` is not empty, answers 400 with
`report.message()` - the reference's distributor does the same: it pushes
the valid part and still returns the validation error.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

from svclog.model import NS, Entry, Labels, PushStream, ValidationError, is_valid_label_name

# Added by the service itself (service-name discovery), so it does not count towards the limit.
SERVICE_NAME_LABEL = "service_name"

# Reasons, as the reference names them in loki_discarded_samples_total{reason}.
LINE_TOO_LONG = "line_too_long"
INVALID_LABELS = "invalid_labels"
MISSING_LABELS = "missing_labels"
TOO_OLD = "greater_than_max_sample_age"
TOO_NEW = "too_far_in_future"
MAX_LABEL_NAMES = "max_label_names_per_series"
LABEL_NAME_TOO_LONG = "label_name_too_long"
LABEL_VALUE_TOO_LONG = "label_value_too_long"
METADATA_DISALLOWED = "disallowed_structured_metadata"
METADATA_TOO_LARGE = "structured_metadata_too_large"
METADATA_TOO_MANY = "structured_metadata_too_many"

_INVALID_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_]")
_RUNE_ERROR = "\ufffd"


class UnparsedLabels(Labels):
    """The labels of a pushed stream whose label string did not parse (an empty set plus the
    parser's error): the decoder keeps the stream so that validation refuses it alone."""

    __slots__ = ("error",)

    def __init__(self, error: str):
        super().__init__()
        self.error = error

    def __str__(self) -> str:
        return "{}"


@dataclass(frozen=True)
class ValidationLimits:
    """Per-tenant limits; defaults are the reference's defaults. 0 disables a size limit."""

    max_line_size: int = 256 * 1024
    max_line_size_truncate: bool = False
    max_label_names_per_series: int = 15
    max_label_name_length: int = 1024
    max_label_value_length: int = 2048
    reject_old_samples: bool = True
    reject_old_samples_max_age_ns: int = 7 * 24 * 3600 * NS
    creation_grace_period_ns: int = 10 * 60 * NS
    allow_structured_metadata: bool = True
    max_structured_metadata_size: int = 64 * 1024
    max_structured_metadata_entries_count: int = 128


@dataclass
class ValidationReport:
    accepted: list[PushStream]
    errors: list[str]
    rejected_entries: int
    rejected_bytes: int
    rejected_by_reason: Counter[str] = field(default_factory=Counter)  # entries per reason
    truncated_entries: int = 0

    def message(self) -> str:
        """All errors in one text, grouped by identical message like the reference."""
        counts = Counter(self.errors)  # keeps first-seen order
        grouped = len(counts) > 1
        return "; ".join(f"{n} errors like: {text}" if grouped or n > 1 else text for text, n in counts.items())

    def _reject(self, reason: str, message: str, entries: list[Entry]) -> None:
        self.errors.append(message)
        self.rejected_entries += len(entries)
        self.rejected_bytes += sum(_entry_size(e) for e in entries)
        self.rejected_by_reason[reason] += len(entries)


def validate_push(streams: list[PushStream], limits: ValidationLimits, now_ns: int) -> ValidationReport:
    """Check every stream and entry against the limits; merge streams with equal labels."""
    report = ValidationReport(accepted=[], errors=[], rejected_entries=0, rejected_bytes=0)
    oldest = now_ns - limits.reject_old_samples_max_age_ns if limits.reject_old_samples else None
    newest = now_ns + limits.creation_grace_period_ns
    merged: dict[Labels, PushStream] = {}
    for stream in streams:
        if not stream.entries:
            continue  # the reference skips empty streams silently, even with bad labels
        entries = _truncate(stream.entries, limits, report)
        labels = stream.labels
        if any(value == "" for _, value in labels):
            # An empty value means "no such label", as in the reference's label parser.
            labels = labels.without(name for name, value in labels if value == "")
        label_error = _check_labels(stream.labels, labels, limits)
        if label_error is not None:
            report._reject(label_error[0], label_error[1], entries)
            continue
        kept = []
        for entry in entries:
            entry_error = _check_entry(entry, labels, limits, oldest, newest)
            if entry_error is not None:
                report._reject(entry_error[0], entry_error[1], [entry])
                continue
            kept.append(_normalize_metadata(entry))
        if not kept:
            continue
        if labels in merged:
            merged[labels].entries.extend(kept)
        else:
            merged[labels] = PushStream(labels, kept)
    report.accepted = list(merged.values())
    return report


def _truncate(entries: list[Entry], limits: ValidationLimits, report: ValidationReport) -> list[Entry]:
    """Cut over-long lines to max_line_size bytes (never inside a UTF-8 character)."""
    size = limits.max_line_size
    if not limits.max_line_size_truncate or size == 0:
        return entries
    out = []
    for entry in entries:
        if len(entry.line) > size // 4 and _utf8_len(entry.line) > size:
            cut = entry.line.encode("utf-8")[:size].decode("utf-8", "ignore")
            entry = Entry(entry.ts, cut, entry.metadata)
            report.truncated_entries += 1
        out.append(entry)
    return out


def _check_labels(raw: Labels, labels: Labels, limits: ValidationLimits) -> tuple[str, str] | None:
    """The reference's ValidateLabels, plus the name syntax check its label parser does."""
    if isinstance(raw, UnparsedLabels):
        return INVALID_LABELS, raw.error
    for name, _ in raw:
        if not is_valid_label_name(name):
            return INVALID_LABELS, f"Error parsing labels '{raw}' with error: invalid label name '{name}'"
    if len(labels) == 0:
        return MISSING_LABELS, "error at least one label pair is required per stream"
    count = len(labels) - (1 if SERVICE_NAME_LABEL in labels else 0)
    if count > limits.max_label_names_per_series:
        return MAX_LABEL_NAMES, (
            f"entry for stream '{raw}' has {count} label names; limit {limits.max_label_names_per_series}"
        )
    for name, value in labels:
        if _utf8_len(name) > limits.max_label_name_length:
            return LABEL_NAME_TOO_LONG, f"stream '{raw}' has label name too long: '{name}'"
        if _utf8_len(value) > limits.max_label_value_length:
            return LABEL_VALUE_TOO_LONG, f"stream '{raw}' has label value too long: '{value}'"
    return None


def _check_entry(
    entry: Entry, labels: Labels, limits: ValidationLimits, oldest: int | None, newest: int
) -> tuple[str, str] | None:
    """The reference's ValidateEntry, in its order of checks."""
    if oldest is not None and entry.ts < oldest:
        return TOO_OLD, (
            f"entry for stream '{labels}' has timestamp too old: {_rfc3339(entry.ts)}, "
            f"oldest acceptable timestamp is: {_rfc3339(oldest)}"
        )
    if entry.ts > newest:
        return TOO_NEW, f"entry for stream '{labels}' has timestamp too new: {_rfc3339(entry.ts)}"
    line_size = _utf8_len(entry.line)
    if limits.max_line_size and line_size > limits.max_line_size:
        return LINE_TOO_LONG, (
            f"Max entry size '{limits.max_line_size}' bytes exceeded for stream '{labels}' "
            f"while adding an entry with length '{line_size}' bytes"
        )
    if entry.metadata:
        if not limits.allow_structured_metadata:
            return METADATA_DISALLOWED, (
                f"stream '{labels}' includes structured metadata, but this feature is disallowed. "
                "Please see `limits_config.allow_structured_metadata` or contact your administrator "
                "to enable it."
            )
        size = _metadata_size(entry)
        if limits.max_structured_metadata_size and size > limits.max_structured_metadata_size:
            return METADATA_TOO_LARGE, (
                f"stream '{labels}' has structured metadata too large: '{size}' bytes, "
                f"limit: '{limits.max_structured_metadata_size}' bytes. Please see "
                "`limits_config.max_structured_metadata_size` or contact your administrator "
                "to increase it."
            )
        count = len(entry.metadata)
        if limits.max_structured_metadata_entries_count and count > limits.max_structured_metadata_entries_count:
            return METADATA_TOO_MANY, (
                f"stream '{labels}' has too many structured metadata labels: '{count}', "
                f"limit: '{limits.max_structured_metadata_entries_count}'. Please see "
                "`limits_config.max_structured_metadata_entries_count` or contact your "
                "administrator to increase it."
            )
    return None


def _normalize_metadata(entry: Entry) -> Entry:
    """Metadata as the reference's distributor stores it, after validation: names made valid
    label names, U+FFFD in values replaced by a space, and empty values dropped (its label
    builder treats an empty value as no label)."""
    if all(value and is_valid_label_name(name) and _RUNE_ERROR not in value for name, value in entry.metadata):
        return entry
    if any(not name for name, _ in entry.metadata):
        # The reference's distributor fails the whole push on a valid entry whose metadata has
        # an empty name, even with an empty value (its label namer refuses it; a 500 there).
        raise ValidationError("label name is empty")
    fixed = tuple(
        (normalize_metadata_name(name), value.replace(_RUNE_ERROR, " ")) for name, value in entry.metadata if value
    )
    return Entry(entry.ts, entry.line, fixed)


def normalize_metadata_name(name: str) -> str:
    """`trace.id` -> `trace_id`, `1x` -> `key_1x` (the OTLP label-name normalisation)."""
    if not name:
        return name
    fixed = _INVALID_NAME_CHARS.sub("_", name)
    return "key_" + fixed if fixed[0].isdigit() else fixed


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _metadata_size(entry: Entry) -> int:
    return sum(_utf8_len(name) + _utf8_len(value) for name, value in entry.metadata)


def _entry_size(entry: Entry) -> int:
    return _utf8_len(entry.line) + _metadata_size(entry)


def _rfc3339(ts_ns: int) -> str:
    # Go's time.RFC3339 layout: whole seconds, UTC here.
    return datetime.fromtimestamp(ts_ns // NS, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
