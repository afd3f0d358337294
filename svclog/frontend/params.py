"""HTTP query parameters -> validated request values (defaults and errors as the reference)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from svclog.gocompat.strconv import quote as go_quote
from svclog.logql.checks import empty_query_error
from svclog.model import NS, ValidationError, now_ns, parse_prom_duration, parse_step, parse_timestamp
from svclog.querier.request import RangeRequest

HOUR = 3600 * NS
MAX_POINTS = 11_000
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
MAX_INTERVAL = 1 << 62


def timestamp_param(form: Mapping[str, str], name: str, default: int) -> int:
    """A timestamp parameter that fits a signed 64-bit nanosecond count, as the reference requires."""
    text = form.get(name)
    value = parse_timestamp(text, default)
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValidationError(f"invalid parameter {name!r}: cannot parse {text!r} to a valid timestamp")
    return value


def _required_query(form: Mapping[str, str]) -> str:
    query = form.get("query")
    if not query:
        raise empty_query_error()  # the reference parses a missing query as ""
    return query


def _limit(form: Mapping[str, str], default: int = 100) -> int:
    text = form.get("limit")
    if text in (None, ""):
        return default
    try:
        limit = int(text)
    except ValueError:
        raise ValidationError(f"invalid limit {text!r}: must be an integer") from None
    if limit <= 0:
        raise ValidationError("limit must be a positive value")
    return limit


def _direction(form: Mapping[str, str]) -> str:
    direction = (form.get("direction") or "backward").lower()
    if direction not in ("forward", "backward"):
        raise ValidationError(f"invalid direction {form.get('direction')!r}: must be forward or backward")
    return direction


def limit_param(form: Mapping[str, str], default: int = 100) -> int:
    return _limit(form, default)


def parse_step_param(text: str) -> int:
    step = _duration(text, "step")
    if step <= 0:
        raise ValidationError("zero or negative query resolution step widths are not accepted. Try a positive integer")
    return step


def _duration(text: str, name: str) -> int:
    try:
        value = parse_step(text)
    except (ValidationError, OverflowError, ValueError):  # OverflowError: "1e300" seconds
        if _overflows(text):
            raise ValidationError(f"cannot parse {go_quote(text)} to a valid duration. It overflows int64") from None
        raise ValidationError(f"cannot parse {name} {text!r}: not a valid duration") from None
    if not INT64_MIN <= value <= INT64_MAX:  # as the reference: a duration is a signed 64-bit count
        raise ValidationError(f"cannot parse {go_quote(text)} to a valid duration. It overflows int64")
    return value


def _overflows(text: str) -> bool:
    try:
        return abs(float(text)) * NS > INT64_MAX
    except (ValueError, OverflowError):
        return False


def check_aligned(start: int, end: int, step: int) -> None:
    """The engine rounds start down and end up to the step: both must stay 64-bit timestamps."""
    aligned_end = end if end % step == 0 else end + step - end % step
    if start - start % step < INT64_MIN or aligned_end + 1 > INT64_MAX:
        raise ValidationError(
            "invalid parameters 'start', 'end' and 'step': the query range rounded to "
            "the step does not fit 64-bit nanosecond timestamps"
        )


def time_range(form: Mapping[str, str], default_span: int, now: int | None = None) -> tuple[int, int]:
    """start/end/since with the reference's defaults: end=now, start=end-since or end-default_span."""
    now = now_ns() if now is None else now
    end = timestamp_param(form, "end", now)
    since = form.get("since")
    span = default_span
    if since:
        try:
            span = parse_prom_duration(since)
        except (ValidationError, OverflowError, ValueError):
            raise ValidationError(f"cannot parse since {since!r}: not a valid duration") from None
    start_default = (min(end, now) if since else end) - span
    start = timestamp_param(form, "start", max(INT64_MIN, start_default))
    return start, end


def default_step(start: int, end: int) -> int:
    return max(math.floor((end - start) / NS / 250), 1) * NS


def range_request(form: Mapping[str, str], now: int | None = None) -> RangeRequest:
    query = _required_query(form)
    start, end = time_range(form, HOUR, now)
    if end < start:
        raise ValidationError("end timestamp must not be before or equal to start time")
    step_text = form.get("step")
    step = _duration(step_text, "step") if step_text else default_step(start, end)
    if step <= 0:
        raise ValidationError("zero or negative query resolution step widths are not accepted. Try a positive integer")
    if (end - start) / step > MAX_POINTS:
        raise ValidationError(
            "exceeded maximum resolution of 11,000 points per timeseries. "
            "Try increasing the value of the step parameter"
        )
    check_aligned(start, end, step)
    interval_text = form.get("interval")
    interval = _duration(interval_text, "interval") if interval_text else None
    if interval is not None and interval < 0:
        raise ValidationError("interval must be a non-negative duration")
    if interval is not None:
        # Entry timestamps span far less than 2^62 ns (146 years), so a longer interval keeps
        # exactly the same entries (one) while `timestamp + interval` can no longer overflow int64.
        interval = min(interval, MAX_INTERVAL)
    return RangeRequest(query, start, end, step, interval, _limit(form), _direction(form))


def instant_request(form: Mapping[str, str], now: int | None = None) -> RangeRequest:
    query = _required_query(form)
    now = now_ns() if now is None else now
    at = timestamp_param(form, "time", now)
    return RangeRequest(query, at, at, 0, None, _limit(form), _direction(form), instant=True)


def labels_range(form: Mapping[str, str], now: int | None = None) -> tuple[int, int]:
    return time_range(form, 6 * HOUR, now)
