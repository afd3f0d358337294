"""Date and time template functions (Sprig `date`/`toDate`/`now`/`unixEpoch`, Loki additions)."""

from __future__ import annotations

from svclog.logql.template.gotime import (
    LOCAL,
    UTC,
    ZERO_TIME,
    GoTime,
    format_time,
    load_location,
    now,
    parse_time,
)
from svclog.logql.template.values import GoInt64

_NS = 1_000_000_000


def date(layout: str, value: object) -> str:
    """Sprig date: format a time (or Unix seconds) in the server's zone; other input means now."""
    if isinstance(value, GoTime):
        t = value
    elif type(value) in (int, GoInt64):
        t = GoTime(int(value) * _NS)  # type: ignore[call-overload]
    else:
        t = now()
    return format_time(GoTime(t.ns, LOCAL), layout)


def to_date(layout: str, value: str) -> GoTime:
    """Sprig toDate: parse in the server's zone; a mismatch gives the zero time."""
    try:
        return parse_time(layout, value, LOCAL)
    except ValueError:
        return ZERO_TIME


def to_date_in_zone(layout: str, zone: str, value: str) -> GoTime:
    try:
        loc = load_location(zone)
    except ValueError:
        loc = UTC
    try:
        return parse_time(layout, value, loc)
    except ValueError:
        return ZERO_TIME


def unix_to_time(epoch: str) -> GoTime:
    """Loki unixToTime: the digit count tells days, s, ms, us or ns."""
    scale = {5: 86400 * _NS, 10: _NS, 13: 1_000_000, 16: 1_000, 19: 1}.get(len(epoch))
    try:
        value = int(epoch) if epoch.lstrip("+-").isdigit() and epoch.isascii() else None
    except ValueError:
        value = None
    if value is None:
        raise ValueError(f"unable to parse time '{epoch}': strconv.ParseInt: parsing \"{epoch}\": invalid syntax")
    if scale is None:
        raise ValueError(f"unable to parse time '{epoch}': <nil>")
    return GoTime(value * scale, LOCAL)


TIME_FUNCS: dict[str, tuple[object, tuple[str, ...]]] = {
    "date": (date, ("str", "any")),
    "toDate": (to_date, ("str", "str")),
    "toDateInZone": (to_date_in_zone, ("str", "str", "str")),
    "now": (now, ()),
    "unixEpoch": (lambda t: str(t.ns // _NS), ("time",)),
    "unixEpochMillis": (lambda t: str(t.ns // 1_000_000), ("time",)),
    "unixEpochNanos": (lambda t: str(t.ns), ("time",)),
    "unixToTime": (unix_to_time, ("str",)),
}
