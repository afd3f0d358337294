"""Go `time.Time` for templates: instants with a zone, Go reference-time layouts, durations.

Calendar math is done on day numbers (proleptic Gregorian, any year) so that Go's
zero time (year 1) and year-0 parse defaults work, and formatting needs no datetime.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_NS = 1_000_000_000
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_DAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_DAYS_IN = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def civil_from_days(z: int) -> tuple[int, int, int]:
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (m <= 2), m, d


@dataclass(frozen=True, slots=True)
class Zone:
    """A Go *time.Location: UTC, a fixed offset, or an IANA zone."""

    name: str
    offset: int = 0
    abbrev: str = ""
    tz: ZoneInfo | None = None

    def lookup(self, secs: int) -> tuple[int, str]:
        if self.tz is None:
            return self.offset, self.abbrev
        try:
            dt = datetime.fromtimestamp(secs, tz=self.tz)
        except (OverflowError, OSError, ValueError):
            return 0, "UTC"
        off = dt.utcoffset()
        return (int(off.total_seconds()) if off else 0), dt.tzname() or ""


UTC = Zone("UTC", 0, "UTC")
LOCAL = UTC  # the reference server runs in UTC; Go's time.Local


def load_location(name: str) -> Zone:
    """time.LoadLocation; raises ValueError for an unknown zone."""
    if name in ("", "UTC"):
        return UTC
    if name == "Local":
        return LOCAL
    try:
        return Zone(name, tz=ZoneInfo(name))
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {name}") from exc


@dataclass(frozen=True, slots=True)
class GoTime:
    ns: int  # nanoseconds since the Unix epoch
    zone: Zone = LOCAL

    def unix(self) -> int:
        return self.ns // _NS

    def __str__(self) -> str:
        return format_time(self, "2006-01-02 15:04:05.999999999 -0700 MST")


ZERO_TIME = GoTime(days_from_civil(1, 1, 1) * 86400 * _NS, UTC)


# -- layouts ------------------------------------------------------------------
_ZONE_CODES = ("-070000", "-07:00:00", "-0700", "-07:00", "-07", "Z070000", "Z07:00:00", "Z0700", "Z07:00", "Z07")


# A layout element's code: a std chunk ("2006", "Jan", "-07:00", ...) or a fraction
# ("frac0" / "frac9", its digit count, the separator before it).
StdCode = str | tuple[str, int, str]
LayoutPart = str | tuple[str, StdCode]  # literal text, or ("std", code)


def _std_at(layout: str, i: int) -> tuple[StdCode, int] | None:
    """The layout element starting at i (Go's nextStdChunk rules) and its end."""
    c, rest = layout[i], layout[i:]
    if c == "J" and rest.startswith("Jan"):
        return ("January", i + 7) if rest.startswith("January") else ("Jan", i + 3)
    if c == "M":
        if rest.startswith("Monday"):
            return "Monday", i + 6
        if rest.startswith("Mon"):
            return "Mon", i + 3
        if rest.startswith("MST"):
            return "MST", i + 3
    if c == "0":
        if rest[1:2] and "1" <= rest[1] <= "6":
            return rest[:2], i + 2
        if rest.startswith("002"):
            return "002", i + 3
    if c == "1":
        return ("15", i + 2) if rest.startswith("15") else ("1", i + 1)
    if c == "2":
        return ("2006", i + 4) if rest.startswith("2006") else ("2", i + 1)
    if c == "_":
        if rest.startswith("_2") and not rest.startswith("_2006"):
            return "_2", i + 2
        if rest.startswith("__2"):
            return "__2", i + 3
    if c in "345":
        return c, i + 1
    if c == "P" and rest.startswith("PM") or c == "p" and rest.startswith("pm"):
        return rest[:2], i + 2
    if c in "-Z":
        for code in _ZONE_CODES:
            if rest.startswith(code):
                return code, i + len(code)
    if c in ".," and rest[1:2] in ("0", "9"):
        ch, j = rest[1], 1
        while j < len(rest) and rest[j] == ch:
            j += 1
        if not rest[j : j + 1].isdigit():
            return ("frac" + ch, j - 1, c), i + j
    return None


@lru_cache(maxsize=256)
def compile_layout(layout: str) -> tuple[LayoutPart, ...]:
    """Split a layout into literal strings and element codes."""
    parts: list[LayoutPart] = []
    lit: list[str] = []
    i = 0
    while i < len(layout):
        found = _std_at(layout, i)
        if found is None:
            lit.append(layout[i])
            i += 1
            continue
        if lit:
            parts.append("".join(lit))
            lit = []
        parts.append(("std", found[0]))
        i = found[1]
    if lit:
        parts.append("".join(lit))
    return tuple(parts)


def _zone_text(code: str, offset: int) -> str:
    if code[0] == "Z" and offset == 0:
        return "Z"
    sign = "-" if offset < 0 else "+"
    off = abs(offset)
    hh, mm, ss = off // 3600, off // 60 % 60, off % 60
    body = code[1:]
    if body in ("07",):
        return f"{sign}{hh:02d}"
    if body == "0700":
        return f"{sign}{hh:02d}{mm:02d}"
    if body == "07:00":
        return f"{sign}{hh:02d}:{mm:02d}"
    if body == "070000":
        return f"{sign}{hh:02d}{mm:02d}{ss:02d}"
    return f"{sign}{hh:02d}:{mm:02d}:{ss:02d}"


def format_time(t: GoTime, layout: str) -> str:
    """time.Time.Format(layout)."""
    secs, nanos = divmod(t.ns, _NS)
    offset, abbrev = t.zone.lookup(secs)
    local = secs + offset
    days, sod = divmod(local, 86400)
    year, month, day = civil_from_days(days)
    hour, minute, second = sod // 3600, sod // 60 % 60, sod % 60
    out: list[str] = []
    for part in compile_layout(layout):
        if isinstance(part, str):
            out.append(part)
            continue
        code = part[1]
        if isinstance(code, tuple):
            kind, width, sep = code
            digits = f"{nanos:09d}"[:width]
            if kind == "frac9":
                digits = digits.rstrip("0")
                if not digits:
                    continue
            out.append(sep + digits)
        elif code == "2006":
            out.append(f"{year:04d}" if year >= 0 else f"-{-year:04d}")
        elif code == "06":
            out.append(f"{year % 100:02d}")
        elif code in ("Jan", "January"):
            out.append(_MONTHS[month - 1][: 3 if code == "Jan" else None])
        elif code in ("1", "01"):
            out.append(f"{month:0{len(code)}d}")
        elif code in ("Mon", "Monday"):
            out.append(_DAYS[(days + 4) % 7][: 3 if code == "Mon" else None])
        elif code in ("2", "02", "_2"):
            out.append(f"{day:02d}" if code == "02" else f"{day:2d}" if code == "_2" else str(day))
        elif code in ("__2", "002"):
            yday = days - days_from_civil(year, 1, 1) + 1
            out.append(f"{yday:3d}" if code == "__2" else f"{yday:03d}")
        elif code == "15":
            out.append(f"{hour:02d}")
        elif code in ("3", "03"):
            h12 = hour % 12 or 12
            out.append(f"{h12:02d}" if code == "03" else str(h12))
        elif code in ("4", "04"):
            out.append(f"{minute:0{len(code)}d}")
        elif code in ("5", "05"):
            out.append(f"{second:0{len(code)}d}")
        elif code in ("PM", "pm"):
            text = "PM" if hour >= 12 else "AM"
            out.append(text if code == "PM" else text.lower())
        elif code == "MST":
            out.append(abbrev or _zone_text("-0700", offset))
        else:
            out.append(_zone_text(code, offset))
    return "".join(out)


# -- parsing ------------------------------------------------------------------
class _Bad(ValueError):
    pass


def _skip(value: str, prefix: str) -> str:
    while prefix:
        if prefix[0] == " ":
            if value and value[0] != " ":
                raise _Bad
            prefix, value = prefix.lstrip(" "), value.lstrip(" ")
            continue
        if not value or value[0] != prefix[0]:
            raise _Bad
        prefix, value = prefix[1:], value[1:]
    return value


def _num(value: str, fixed: int, maxlen: int = 2) -> tuple[int, str]:
    m = re.match(rf"\d{{1,{maxlen}}}", value)
    if not m or (fixed and len(m.group()) < fixed):
        raise _Bad
    return int(m.group()), value[m.end() :]


def _lookup(value: str, names: tuple[str, ...]) -> tuple[int, str]:
    for idx, name in enumerate(names):
        if value[: len(name)].lower() == name.lower():
            return idx, value[len(name) :]
    raise _Bad


def _parse_offset(code: str, value: str) -> tuple[int, str]:
    if code[0] == "Z" and value.startswith("Z"):
        return 0, value[1:]
    body = code[1:]
    m = {
        "07": r"([+-])(\d\d)()()",
        "0700": r"([+-])(\d\d)(\d\d)()",
        "07:00": r"([+-])(\d\d):(\d\d)()",
        "070000": r"([+-])(\d\d)(\d\d)(\d\d)",
        "07:00:00": r"([+-])(\d\d):(\d\d):(\d\d)",
    }[body]
    match = re.match(m, value)
    if not match:
        raise _Bad
    sign, hh, mm, ss = match.groups()
    off = int(hh) * 3600 + int(mm or 0) * 60 + int(ss or 0)
    return (-off if sign == "-" else off), value[match.end() :]


class _Parsed:
    """Fields collected while parsing; omitted ones default like Go (year 0, January 1)."""

    __slots__ = ("day", "hour", "minute", "month", "ns", "offset", "pm", "second", "year", "zone_name")

    def __init__(self) -> None:
        self.year, self.month, self.day = 0, 1, 1
        self.hour = self.minute = self.second = self.ns = 0
        self.offset: int | None = None
        self.zone_name: str | None = None
        self.pm: bool | None = None


def _frac(value: str, width: int | None) -> tuple[int, str]:
    """Fractional seconds after '.' or ',': exactly `width` digits, or all of them."""
    m = re.match(r"[.,](\d+)", value)
    if not m or (width is not None and len(m.group(1)) < width):
        raise _Bad
    digits = m.group(1) if width is None else m.group(1)[:width]
    return int(digits.ljust(9, "0")[:9]), value[1 + len(digits) :]


def _parse_date_elem(code: str, value: str, p: _Parsed) -> str:
    if code == "2006":
        if len(value) < 4 or not value[:4].isdigit():
            raise _Bad
        p.year, value = int(value[:4]), value[4:]
    elif code == "06":
        yy, value = _num(value, 2)
        p.year = yy + (1900 if yy >= 69 else 2000)
    elif code in ("Jan", "January"):
        idx, value = _lookup(value, _MONTHS if code == "January" else tuple(x[:3] for x in _MONTHS))
        p.month = idx + 1
    elif code in ("Mon", "Monday"):
        _, value = _lookup(value, _DAYS if code == "Monday" else tuple(x[:3] for x in _DAYS))
    elif code in ("1", "01"):
        p.month, value = _num(value, 2 if code == "01" else 0)
        if not 1 <= p.month <= 12:
            raise _Bad
    elif code in ("2", "02", "_2"):
        if code == "_2" and value.startswith(" "):
            value = value[1:]
        p.day, value = _num(value, 2 if code == "02" else 0)
    else:  # day of year: accepted, not applied
        _, value = _num(value.lstrip(" ") if code == "__2" else value, 3 if code == "002" else 0, 3)
    return value


def _parse_clock_elem(code: StdCode, value: str, p: _Parsed, frac_next: bool) -> str:
    if isinstance(code, tuple):
        if code[0] == "frac0":
            p.ns, value = _frac(value, code[1])
        elif re.match(r"[.,]\d", value):
            p.ns, value = _frac(value, None)
    elif code in ("15", "3", "03"):
        p.hour, value = _num(value, 2 if code == "03" else 0)
        if p.hour > (23 if code == "15" else 12):
            raise _Bad
    elif code in ("4", "04"):
        p.minute, value = _num(value, 2 if code == "04" else 0)
    elif code in ("5", "05"):
        p.second, value = _num(value, 2 if code == "05" else 0)
        # Go accepts fractional seconds after the seconds even when the layout has none.
        if not frac_next and re.match(r"[.,]\d", value):
            p.ns, value = _frac(value, None)
    elif code in ("PM", "pm"):
        expect = ("PM", "AM") if code == "PM" else ("pm", "am")
        if value[:2] not in expect:
            raise _Bad
        p.pm, value = value[:2] == expect[0], value[2:]
    elif code == "MST":
        m = re.match(r"[A-Z]{3,5}", value)
        if not m:
            raise _Bad
        p.zone_name, value = m.group(), value[m.end() :]
    else:
        p.offset, value = _parse_offset(code, value)
    return value


_DATE_CODES = frozenset({"2006", "06", "Jan", "January", "Mon", "Monday", "1", "01", "2", "02", "_2", "__2", "002"})


def parse_time(layout: str, value: str, loc: Zone) -> GoTime:
    """time.ParseInLocation; raises ValueError when value does not match layout."""
    p = _Parsed()
    parts = compile_layout(layout)
    try:
        for idx, part in enumerate(parts):
            if isinstance(part, str):
                value = _skip(value, part)
            elif isinstance(part[1], str) and part[1] in _DATE_CODES:
                value = _parse_date_elem(part[1], value, p)
            else:
                nxt = parts[idx + 1] if idx + 1 < len(parts) else None
                frac_next = isinstance(nxt, tuple) and isinstance(nxt[1], tuple)
                value = _parse_clock_elem(part[1], value, p, frac_next)
    except (_Bad, IndexError):
        raise ValueError(f"parsing time {value!r} as {layout!r}: cannot parse") from None
    if value:
        raise ValueError(f"parsing time: extra text: {value!r}")
    return _build_time(p, loc)


def _build_time(p: _Parsed, loc: Zone) -> GoTime:
    if p.pm is not None:
        if p.pm and p.hour < 12:
            p.hour += 12
        elif not p.pm and p.hour == 12:
            p.hour = 0
    leap = p.year % 4 == 0 and (p.year % 100 != 0 or p.year % 400 == 0)
    if p.day < 1 or p.day > _DAYS_IN[p.month - 1] + (p.month == 2 and leap):
        raise ValueError("parsing time: day out of range")
    wall = days_from_civil(p.year, p.month, p.day) * 86400 + p.hour * 3600 + p.minute * 60 + p.second
    if p.offset is not None:
        secs = wall - p.offset
        zone = loc if loc.lookup(secs)[0] == p.offset else Zone("", p.offset, "")
    elif p.zone_name is not None:
        # A known abbreviation of the location keeps it; others get offset 0 under that name.
        zone = (
            loc
            if loc.lookup(wall)[1] == p.zone_name
            else (UTC if p.zone_name == "UTC" else Zone(p.zone_name, 0, p.zone_name))
        )
        secs = wall - zone.lookup(wall)[0]
    else:
        zone = loc
        secs = wall - loc.lookup(wall - loc.lookup(wall)[0])[0]
    return GoTime(secs * _NS + p.ns, zone)


def now() -> GoTime:
    return GoTime(time.time_ns(), LOCAL)
