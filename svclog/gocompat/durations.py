"""Durations as Go's time package and Prometheus's model package spell them (values in nanoseconds)."""

from __future__ import annotations

__all__ = ["format_go_duration", "format_prom_duration", "parse_go_duration"]

_NS = 1_000_000_000
_MS = 1_000_000
_INT64_MAX = (1 << 63) - 1
_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": _MS, "s": _NS, "m": 60 * _NS, "h": 3600 * _NS}


def time_quote(text: str) -> str:
    """The time package's own quoting in its errors: `"` and `\\` escaped, any byte of a
    non-ASCII or control character written as \\xNN (not strconv.Quote)."""
    out = ['"']
    for ch in text:
        if ch < " " or ch >= "\x80":
            out.extend(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogateescape"))
        else:
            out.append("\\" + ch if ch in '"\\' else ch)
    out.append('"')
    return "".join(out)


def _digits(s: str, pos: int) -> int:
    end = pos
    while end < len(s) and "0" <= s[end] <= "9":
        end += 1
    return end


def parse_go_duration(text: str) -> int:
    """time.ParseDuration: `1h30m`, `1.5s`, `-250ms`, `0`; raises ValueError with Go's message.

    As Go: a fraction beyond int64's digits is cut, fractions scale through float64 (so
    `1.0000000001s` is 1s), and the total must fit a signed 64-bit count of nanoseconds."""
    invalid = ValueError(f"time: invalid duration {time_quote(text)}")
    s = text
    neg = False
    if s[:1] in ("-", "+"):
        neg, s = s[0] == "-", s[1:]
    if s == "0":
        return 0
    if not s:
        raise invalid
    total = 0
    pos = 0
    while pos < len(s):
        if not (s[pos] == "." or "0" <= s[pos] <= "9"):
            raise invalid
        end = _digits(s, pos)
        whole = int(s[pos:end]) if end > pos else 0
        if whole > 1 << 63:
            raise invalid  # leadingInt overflows
        pre, pos = end > pos, end
        frac, scale, post = 0, 1.0, False
        if pos < len(s) and s[pos] == ".":
            end = _digits(s, pos + 1)
            post = end > pos + 1
            for digit in s[pos + 1 : end]:  # leadingFraction: digits past int64 precision are dropped
                nxt = frac * 10 + int(digit)
                if frac > _INT64_MAX // 10 or nxt > 1 << 63:
                    break
                frac, scale = nxt, scale * 10
            pos = end
        if not pre and not post:
            raise invalid
        end = pos
        while end < len(s) and not (s[end] == "." or "0" <= s[end] <= "9"):
            end += 1
        unit_text = s[pos:end]
        if not unit_text:
            raise ValueError(f"time: missing unit in duration {time_quote(text)}")
        unit = _UNITS.get(unit_text)
        if unit is None:
            raise ValueError(f"time: unknown unit {time_quote(unit_text)} in duration {time_quote(text)}")
        pos = end
        if whole > (1 << 63) // unit:
            raise invalid
        value = whole * unit
        if frac:
            value += int(float(frac) * (float(unit) / scale))
            if value > 1 << 63:
                raise invalid
        total += value
        if total > 1 << 63:
            raise invalid
    if neg:
        return -total
    if total > _INT64_MAX:
        raise invalid
    return total


def format_go_duration(ns: int) -> str:
    """time.Duration.String(): `1h30m0s`, `250ms`, `1.5s`, `1µs`, `0s`."""
    if ns == 0:
        return "0s"
    u = abs(ns)
    if u < _NS:
        for unit, size in (("ms", _MS), ("µs", 1_000), ("ns", 1)):
            if u >= size:
                out = _fraction(u, size) + unit
                break
    else:
        hours, rem = divmod(u, 3600 * _NS)
        minutes, rem = divmod(rem, 60 * _NS)
        out = _fraction(rem, _NS) + "s"
        if hours:
            out = f"{hours}h{minutes}m" + out
        elif minutes:
            out = f"{minutes}m" + out
    return ("-" if ns < 0 else "") + out


def _fraction(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}." + f"{frac:0{digits}d}".rstrip("0")


# Years and weeks only when they divide the rest exactly: 90d reads better than 12w6d.
_PROM_UNITS = (
    ("y", 365 * 86400 * 1000, True),
    ("w", 7 * 86400 * 1000, True),
    ("d", 86400 * 1000, False),
    ("h", 3600 * 1000, False),
    ("m", 60 * 1000, False),
    ("s", 1000, False),
    ("ms", 1, False),
)


def format_prom_duration(ns: int) -> str:
    """Prometheus model.Duration.String(): `5m`, `1h30m`, `30d1h`, `2w`, `1y`, `250ms`, `0s`
    (whole milliseconds; a sub-millisecond rest is dropped, as there)."""
    ms = abs(ns) // _MS * (-1 if ns < 0 else 1)  # Go's integer division truncates toward zero
    if ms == 0:
        return "0s"
    out = []
    for unit, size, exact in _PROM_UNITS:
        if exact and ms % size:
            continue
        count = ms // size
        if count > 0:
            out.append(f"{count}{unit}")
            ms -= count * size
    return "".join(out)
