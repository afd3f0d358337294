"""LogBatch: the columnar unit that flows through pipeline stages.

One batch holds entries of one stream. `stream` holds the labels that are constant
over the batch; `labels` holds per-entry label columns (structured metadata, parsed
labels, `__error__`, ...) where null means "absent for this entry". The two never
share a name: a stage that changes a stream label first moves it into `labels`.
`origin` keeps the original stream labels and `metadata_names` the structured-metadata
keys: parsers rename a key that is an original stream label, or structured metadata of
the entry, with the `_extracted` suffix (`set_parser_label`).
`parsed` names the columns written by parsers and formatters; label_format renames
need the category (parsed > structured metadata > stream) to pick a winner.
`parsed_rows` narrows that for a column some of whose values came from elsewhere (a
label_format rename or template replaced structured metadata or a stream label on
some entries only): a boolean per entry,
true where a parser/formatter wrote the value. Without an entry there, every value
of a `parsed` column is parsed. The categorize-labels encoding reads these.
`extracted` is, per label, where a parser or formatter ever set it, even if a later stage
dropped or renamed it: the reference's parsers skip such a label (and skip the entry when
all the labels the query requires are among them). `deleted` is, per label, where drop,
keep or a label_format rename deleted it: a `by` grouping of the reference's sample
extractor leaves such a label out even if a later stage set it again.

`__error__` and `__error_details__` live in `labels` like any other column.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from svclog.logql.source import StreamBlock
from svclog.model import Labels

ERROR_LABEL = "__error__"
ERROR_DETAILS_LABEL = "__error_details__"
EXTRACTED_SUFFIX = "_extracted"

# Error values, as the reference names them.
ERR_JSON = "JSONParserErr"
ERR_LOGFMT = "LogfmtParserErr"
ERR_LABEL_FILTER = "LabelFilterErr"
ERR_SAMPLE_EXTRACTION = "SampleExtractionErr"
ERR_TEMPLATE_FORMAT = "TemplateFormatErr"


# LogBatch.origin's default, compared by identity: "the stream's labels at construction"
_STREAM_AT_START = Labels()


@dataclass
class LogBatch:
    stream: Labels
    ts: pa.Array
    line: pa.Array
    labels: dict[str, pa.Array] = field(default_factory=dict)
    origin: Labels = _STREAM_AT_START
    metadata_names: frozenset[str] = frozenset()
    parsed: frozenset[str] = frozenset()
    parsed_rows: dict[str, pa.Array] = field(default_factory=dict)
    extracted: dict[str, pa.Array] = field(default_factory=dict)
    deleted: dict[str, pa.Array] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.origin is _STREAM_AT_START:
            self.origin = self.stream

    def __len__(self) -> int:
        return len(self.ts)

    def filter(self, mask: pa.Array) -> LogBatch:
        """Keep the entries where mask is true (null counts as false)."""
        mask = pc.fill_null(mask, False)
        return self._derive(lambda arr: pc.filter(arr, mask))

    def take(self, indices: pa.Array) -> LogBatch:
        return self._derive(lambda arr: pc.take(arr, indices))

    def _derive(self, fn: Callable[[pa.Array], pa.Array]) -> LogBatch:
        return LogBatch(
            stream=self.stream,
            ts=fn(self.ts),
            line=fn(self.line),
            labels={k: fn(v) for k, v in self.labels.items()},
            origin=self.origin,
            metadata_names=self.metadata_names,
            parsed=self.parsed,
            parsed_rows={k: fn(v) for k, v in self.parsed_rows.items()},
            extracted={k: fn(v) for k, v in self.extracted.items()},
            deleted={k: fn(v) for k, v in self.deleted.items()},
        )

    def label(self, name: str) -> pa.Array:
        """Effective value of a label per entry (null when absent)."""
        if name in self.labels:
            return self.labels[name]
        value = self.stream.get(name)
        if value is None:
            return pa.nulls(len(self), pa.string())
        return pa.repeat(pa.scalar(value, pa.string()), len(self))

    def has_label(self, name: str) -> bool:
        """Does any entry carry the label?"""
        column = self.labels.get(name)
        if column is not None:
            return bool(column.null_count < len(column))
        return name in self.stream

    def set_label(self, name: str, values: pa.Array) -> None:
        """Set a per-entry label column (null = absent), overriding a stream label of that name."""
        if name in self.stream:
            self.stream = self.stream.without([name])
        self.labels[name] = values

    def set_parsed(self, name: str, values: pa.Array) -> None:
        """Set a column written by a parser/formatter: non-null values win, nulls keep the old value."""
        old = self.label(name)
        if old.null_count == len(old):
            self.set_label(name, values)
            self.mark_parsed(name)
        else:
            self.set_label(name, pc.coalesce(values, old))
            self.mark_parsed(name, pc.is_valid(values))

    def set_parser_label(self, name: str, values: pa.Array, *, keep_parsed: bool = False) -> None:
        """A parser's values for label `name`, as the reference's parsers name them.

        The caller has already renamed a key that is an original stream label to
        `<key>_extracted`; here an entry holding `name` as structured metadata gets
        the value under `<name>_extracted` too, so the metadata stays as it is.
        `keep_parsed`: a plain parser (json, logfmt, regexp, pattern, unpack without
        parameters) leaves an entry's label alone where a parser or label_format already
        set it, as the reference's parsers skip a key it records as extracted.
        """
        held = None
        if not (name.endswith(EXTRACTED_SUFFIX) and name[: -len(EXTRACTED_SUFFIX)] in self.origin):
            held = self.metadata_rows(name)
        if held is None:
            self.set_parsed(name, self._unparsed(name, values) if keep_parsed else values)
            return
        absent = pa.scalar(None, pa.string())
        for target, part in (
            (name + EXTRACTED_SUFFIX, pc.if_else(held, values, absent)),
            (name, pc.if_else(held, absent, values)),
        ):
            self.set_parsed(target, self._unparsed(target, part) if keep_parsed else part)

    def _unparsed(self, name: str, values: pa.Array) -> pa.Array:
        """`values` without the entries where a parser or formatter set `name` already."""
        extracted = self.extracted.get(name)
        if extracted is None:
            return values
        return pc.if_else(extracted, pa.scalar(None, pa.string()), values)

    def metadata_rows(self, name: str) -> pa.Array | None:
        """Where an entry holds `name` as structured metadata (None: no entry does)."""
        if name not in self.metadata_names:
            return None
        column = self.labels.get(name)
        if column is None or column.null_count == len(column):
            return None
        held = pc.is_valid(column)
        if name in self.parsed:  # a parser or formatter wrote over it on some entries, or all
            rows = self.parsed_rows.get(name)
            if rows is None:
                return None
            held = pc.and_(held, pc.invert(rows))
        return held if pc.any(held).as_py() else None

    def was_extracted(self, name: str, row: int) -> bool:
        """Whether a parser or formatter ever set `name` on entry `row` (see `extracted`)."""
        rows = self.extracted.get(name)
        return rows is not None and bool(rows[row].as_py())

    def mark_parsed(self, name: str, rows: pa.Array | None = None) -> None:
        """Record that a parser/formatter wrote `name` on `rows` (None: on every entry holding it)."""
        written = pc.is_valid(self.label(name)) if rows is None else pc.fill_null(rows, False)
        before = self.extracted.get(name)
        self.extracted[name] = written if before is None else pc.or_(before, written)
        if rows is None:
            self.parsed_rows.pop(name, None)
        elif name in self.parsed_rows:
            self.parsed_rows[name] = pc.or_(self.parsed_rows[name], pc.fill_null(rows, False))
        elif name not in self.parsed:  # a parsed column without rows is parsed throughout already
            self.parsed_rows[name] = pc.fill_null(rows, False)
        self.parsed = self.parsed | {name}

    def record_deleted(self, name: str, rows: pa.Array) -> None:
        """A stage (drop, keep, a label_format rename's source) deleted `name` on `rows`."""
        rows = pc.fill_null(rows, False)
        before = self.deleted.get(name)
        self.deleted[name] = rows if before is None else pc.or_(before, rows)

    def drop_label(self, name: str) -> None:
        self.labels.pop(name, None)
        if name in self.stream:
            self.stream = self.stream.without([name])

    def names(self) -> list[str]:
        """Every label name present on at least one entry (stream names included)."""
        present = [k for k, v in self.labels.items() if v.null_count < len(v)]
        return sorted(set(self.stream.names()) | set(present))


# ---------------------------------------------------------------- errors


def error_column(batch: LogBatch) -> pa.Array:
    """`__error__` per entry (null = no error)."""
    return batch.label(ERROR_LABEL)


def has_error(batch: LogBatch) -> pa.Array:
    return pc.is_valid(error_column(batch))


def set_error(
    batch: LogBatch,
    mask: pa.Array,
    error: str | pa.Array,
    details: str | pa.Array | None = None,
    *,
    overwrite: bool = True,
) -> None:
    """Record `error` (and `details`) on the entries selected by `mask`.

    Parsers overwrite an earlier error (overwrite=True); label filters keep the first
    one (overwrite=False), as the reference does. Details are only written with an error.
    """
    mask = pc.fill_null(mask, False)
    if not pc.any(mask).as_py():
        return
    if not overwrite:
        mask = pc.and_(mask, pc.invert(has_error(batch)))
    n = len(batch)
    err = _broadcast(error, n)
    batch.set_label(ERROR_LABEL, pc.if_else(mask, err, error_column(batch)))
    if details is not None:
        det = _broadcast(details, n)
        # Details absent (null) leave any earlier details in place, like SetErrorDetails is skipped.
        det_mask = pc.and_(mask, pc.is_valid(det))
        batch.set_label(ERROR_DETAILS_LABEL, pc.if_else(det_mask, det, batch.label(ERROR_DETAILS_LABEL)))


def _broadcast(value: str | pa.Array, n: int) -> pa.Array:
    if isinstance(value, str):
        return pa.repeat(pa.scalar(value, pa.string()), n)
    return value


# ---------------------------------------------------------------- construction


def block_to_batch(block: StreamBlock) -> LogBatch:
    """A stream block as a batch; structured metadata becomes per-entry label columns.

    A metadata key that is also a stream label gets the `_extracted` suffix and a key
    named `__error__`/`__error_details__` sets the error, as the reference's builder does.
    """
    line = block.line
    if pa.types.is_large_string(line.type):
        line = line.cast(pa.string())
    batch = LogBatch(stream=block.labels, ts=block.ts, line=line)
    if block.metadata is None or len(block.metadata) == 0:
        return batch
    meta = block.metadata
    # Offsets are absolute into the (unsliced) key/item children.
    offsets = meta.offsets.to_numpy()
    lo, hi = int(offsets[0]), int(offsets[-1])
    keys = meta.keys.slice(lo, hi - lo)
    items = meta.items.slice(lo, hi - lo)
    parents = np.repeat(np.arange(len(meta)), np.diff(offsets))
    n = len(block)
    names: set[str] = set()
    for key in pc.unique(keys).to_pylist():
        if key is None:
            continue
        sel = pc.equal(keys, key)
        rows = parents[sel.to_numpy(zero_copy_only=False)]
        values = pc.filter(items, sel)
        positions = np.full(n, -1, dtype=np.int64)
        positions[rows] = np.arange(len(values))  # repeated keys in one entry: last wins
        column = values.take(pa.array(positions, mask=positions < 0))
        name = key + EXTRACTED_SUFFIX if key in block.labels else key
        batch.labels[name] = column.cast(pa.string())
        names.add(name)
    batch.metadata_names = frozenset(names - {ERROR_LABEL, ERROR_DETAILS_LABEL})
    return batch


def batch_from_rows(stream: Labels, rows: list[tuple[int, str]] | list[tuple[int, str, dict[str, str]]]) -> LogBatch:
    """A small batch from Python rows (ts, line[, metadata]); for tests and tools."""
    ts = pa.array([r[0] for r in rows], pa.int64())
    line = pa.array([r[1] for r in rows], pa.string())
    meta = None
    if any(len(r) > 2 and r[2] for r in rows):
        from svclog.logql.source import METADATA_TYPE

        meta = pa.array([list((r[2] if len(r) > 2 else {}).items()) for r in rows], METADATA_TYPE)
    return block_to_batch(StreamBlock(stream, ts, line, meta))
