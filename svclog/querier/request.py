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
    # the answer goes straight into a JSON body: a streams answer's values may come encoded
    # already (json_codec.answer_to_json); parquet, legacy and replayed answers read them as lists
    encoded_values: bool = False

    @property
    def categorize_labels(self) -> bool:
        return CATEGORIZE_LABELS in self.encoding_flags


CATEGORIZE_LABELS = "categorize-labels"
