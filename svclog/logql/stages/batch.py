"""LogBatch: the columnar unit that flows through pipeline stages.

One batch holds entries of one stream. `stream` holds the labels that are constant
over the batch; `labels` holds per-entry label columns (structured metadata, parsed
labels, `__error__`, ...) where null means "absent for this entry". The two never
share a name: a stage that changes a stream label first moves it into `labels`.
`origin` keeps the original stream labels (parsers rename colliding keys with the
`_extracted` suffix against them) and `metadata_names` the structured-metadata keys.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from svclog.model import Labels


@dataclass
class LogBatch:
    stream: Labels
    ts: pa.Array
    line: pa.Array
    labels: dict[str, pa.Array] = field(default_factory=dict)
    origin: Labels | None = None
    metadata_names: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.origin is None:
            self.origin = self.stream

    def __len__(self) -> int:
        return len(self.ts)

    def filter(self, mask: pa.Array) -> "LogBatch":
        """Keep the entries where mask is true (null counts as false)."""
        mask = pc.fill_null(mask, False)
        return LogBatch(
            stream=self.stream,
            ts=pc.filter(self.ts, mask),
            line=pc.filter(self.line, mask),
            labels={k: pc.filter(v, mask) for k, v in self.labels.items()},
            origin=self.origin,
            metadata_names=self.metadata_names,
        )

    def label(self, name: str) -> pa.Array:
        """Effective value of a label per entry (null when absent)."""
        if name in self.labels:
            return self.labels[name]
        value = self.stream.get(name)
        return pa.nulls(len(self), pa.string()) if value is None else pa.array([value] * len(self), pa.string())

    def has_label(self, name: str) -> bool:
        return name in self.labels or name in self.stream

    def set_label(self, name: str, values: pa.Array) -> None:
        """Set a per-entry label column (null = absent), overriding a stream label of that name."""
        if name in self.stream:
            self.stream = self.stream.without([name])
        self.labels[name] = values

    def drop_label(self, name: str) -> None:
        self.labels.pop(name, None)
        if name in self.stream:
            self.stream = self.stream.without([name])
