"""Query parameters and the evaluation time grid (step alignment, limits on resolution)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from svclog.model import NS, ValidationError

MAX_POINTS_PER_SERIES = 11_000
DEFAULT_LIMIT = 100
DIRECTIONS = ("forward", "backward")
# A query whose selectors read at most this is small: a log query reads its range at once
# (log_windows.py); past it a query is large, and its work gives way to small queries' from the
# start (cpu_priority.py)
SMALL_READ_BYTES = 1 << 20


@dataclass(frozen=True)
class QueryParams:
    """One query's time range and options; every time is integer nanoseconds.

    An instant query has start == end == the evaluation time. `step` is only
    used by range metric queries, `interval`, `limit` and `direction` only by
    log queries.
    """

    start: int
    end: int
    step: int
    interval: int | None = None
    limit: int = DEFAULT_LIMIT
    direction: str = "backward"
    instant: bool = False
    # log queries: split each entry's labels into stream / structured metadata / parsed
    categorize_labels: bool = False
    # bytes the whole query's selectors read, when the frontend learnt them before sending it
    # (None: unknown)
    read_bytes: int | None = None

    @property
    def reads_little(self) -> bool:
        return self.read_bytes is not None and self.read_bytes <= SMALL_READ_BYTES

    @property
    def reads_much(self) -> bool:
        return reads_much(self.read_bytes)

    @classmethod
    def for_range(
        cls,
        start: int,
        end: int,
        step: int | None = None,
        interval: int | None = None,
        limit: int = DEFAULT_LIMIT,
        direction: str = "backward",
    ) -> QueryParams:
        """A range query; `step` defaults to the reference's dynamic step."""
        return cls(start, end, default_step(start, end) if step is None else step, interval, limit, direction, False)

    @classmethod
    def for_instant(cls, time: int, limit: int = DEFAULT_LIMIT, direction: str = "backward") -> QueryParams:
        return cls(time, time, 0, None, limit, direction, True)


def reads_much(read_bytes: int | None) -> bool:
    """Whether a query reading `read_bytes` (None: unknown) is known to be large."""
    return read_bytes is not None and read_bytes > SMALL_READ_BYTES


def default_step(start: int, end: int) -> int:
    """The reference's step when none is given: (end - start) / 250, in whole seconds, at least 1s."""
    seconds = max((end - start) // NS // 250, 1)
    return seconds * NS


def validate(params: QueryParams) -> None:
    """Checks the reference makes before running a query (raises ValidationError)."""
    if params.direction not in DIRECTIONS:
        raise ValidationError(f"invalid direction {params.direction!r}")
    if params.limit < 0:
        raise ValidationError("limit must be a positive value")
    if params.instant:
        return
    if params.end < params.start:
        raise ValidationError("end timestamp must not be before or equal to start time")
    if params.step <= 0:
        raise ValidationError("zero or negative query resolution step widths are not accepted. Try a positive integer")
    if (params.end - params.start) / params.step > MAX_POINTS_PER_SERIES:
        raise ValidationError(
            "exceeded maximum resolution of 11,000 points per timeseries. "
            "Try decreasing the query resolution (?step=XX)"
        )
    if params.interval is not None and params.interval < 0:
        raise ValidationError("interval must be a positive value")


def step_times(params: QueryParams) -> np.ndarray:
    """Evaluation times of a metric query (int64 ns).

    Range queries are aligned to the step as the reference's query frontend does:
    start rounded down and end rounded up to a multiple of the step.
    """
    if params.instant:
        return np.array([params.start], dtype=np.int64)
    step = params.step
    start = params.start - params.start % step
    end = params.end if params.end % step == 0 else params.end + step - params.end % step
    return np.arange(start, end + 1, step, dtype=np.int64)
