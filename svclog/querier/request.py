"""A validated query request as the querier receives it (times in ns)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RangeRequest:
    query: str
    start: int
    end: int
    step: int
    interval: int | None
    limit: int
    direction: str
    instant: bool = False
    # response encoding flags the client asked for (X-Svc/X-Loki-Response-Encoding-Flags)
    encoding_flags: tuple[str, ...] = ()

    @property
    def categorize_labels(self) -> bool:
        return CATEGORIZE_LABELS in self.encoding_flags


CATEGORIZE_LABELS = "categorize-labels"
