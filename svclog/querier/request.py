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
