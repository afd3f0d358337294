"""Leaf data model: labels, matchers, entries, tenants, time/duration/bytes parsing, user errors.

Everything here is plain Python with no I/O; every other package may import it.
"""
from __future__ import annotations

import enum
import hashlib
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timezone
from typing import NamedTuple

import re2

# ---------------------------------------------------------------- errors

class SvcError(Exception):
    """An error a user can cause; serve/ maps each subclass to one HTTP status."""

    status = 400


class ParseError(SvcError):
    """Invalid LogQL (or other user-written syntax); carries the position when known."""

    def __init__(self, message: str, line: int = 0, column: int = 0):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


class ValidationError(SvcError):
    """Bad request parameters or push content."""


class TenantError(SvcError):
    """Missing or invalid X-Scope-OrgID."""

    status = 401


class InvalidTenantError(TenantError):
    """A tenant ID that is present but malformed: 400, as the reference's push handler answers."""

    status = 400


class LimitError(SvcError):
    """A configured limit was exceeded (query or ingest)."""


class RateLimitError(SvcError):
    status = 429


class NotFoundError(SvcError):
    status = 404


# ---------------------------------------------------------------- labels

_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def is_valid_label_name(name: str) -> bool:
    return bool(_LABEL_NAME.match(name))


def go_quote(value: str) -> str:
    """Quote like Go's strconv.Quote, which is how label values print in label strings."""
    out = ['"']
    for ch in value:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


class Labels:
    """An immutable, sorted label set; hashable, usable as a dict key."""

    __slots__ = ("_items", "_hash", "_str")

    def __init__(self, items: Iterable[tuple[str, str]] = ()):
        self._items: tuple[tuple[str, str], ...] = tuple(sorted(dict(items).items()))
        self._hash = hash(self._items)
        self._str: str | None = None

    def __reduce__(self):
        # str hashes differ between processes (hash randomisation): never ship `_hash`.
        return (Labels, (self._items,))

    @classmethod
    def from_dict(cls, mapping: Mapping[str, str]) -> Labels:
        return cls(mapping.items())

    @property
    def items(self) -> tuple[tuple[str, str], ...]:
        return self._items

    def to_dict(self) -> dict[str, str]:
        return dict(self._items)

    def names(self) -> list[str]:
        return [k for k, _ in self._items]

    def get(self, name: str, default: str | None = None) -> str | None:
        for k, v in self._items:
            if k == name:
                return v
        return default

    def __contains__(self, name: str) -> bool:
        return any(k == name for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self):
        return iter(self._items)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Labels) and self._items == other._items

    def __lt__(self, other: Labels) -> bool:
        return self._items < other._items

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        if self._str is None:
            self._str = "{" + ", ".join(f"{k}={go_quote(v)}" for k, v in self._items) + "}"
        return self._str

    def __repr__(self) -> str:
        return f"Labels({self})"

    def with_(self, **updates: str) -> Labels:
        merged = dict(self._items)
        merged.update(updates)
        return Labels(merged.items())

    def without(self, names: Iterable[str]) -> Labels:
        drop = set(names)
        return Labels((k, v) for k, v in self._items if k not in drop)

    def keep(self, names: Iterable[str]) -> Labels:
        wanted = set(names)
        return Labels((k, v) for k, v in self._items if k in wanted)

    def fingerprint(self) -> int:
        """Stable 64-bit stream fingerprint (same on every process and run)."""
        digest = hashlib.blake2b(str(self).encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big")


# ---------------------------------------------------------------- matchers

class MatchType(enum.Enum):
    EQ = "="
    NEQ = "!="
    RE = "=~"
    NRE = "!~"


# RE2 codes -> Go regexp/syntax texts (Go's parser is a port of RE2's; only the words differ)
_GO_REGEXP_ERRORS = {
    "missing )": "missing closing )",
    "missing ]": "missing closing ]",
    "trailing \\": "trailing backslash at end of expression",
    "no argument for repetition operator": "missing argument to repetition operator",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid repetition size": "invalid repeat count",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid named capture group": "invalid named capture",
    "pattern too large - compile failed": "expression too large",
}
# `\C` (any byte) is RE2-only; Go rejects it.
_ANY_BYTE_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\C")
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


def compile_go_regexp(pattern: str) -> re2._Regexp:
    """Compile `pattern` with RE2, the dialect of Go's regexp that LogQL uses.

    Raises ParseError with Go's wording (`error parsing regexp: <code>: `<arg>``).
    """
    if _ANY_BYTE_ESCAPE.search(pattern):
        raise ParseError("error parsing regexp: invalid escape sequence: `\\C`")
    try:
        return re2.compile(pattern, options=_RE2_OPTIONS)
    except re2.error as err:
        text = err.args[0] if err.args else str(err)
        text = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
        code, _, arg = text.partition(": ")
        code = _GO_REGEXP_ERRORS.get(code, code)
        raise ParseError(f"error parsing regexp: {code}: `{arg}`" if arg else f"error parsing regexp: {code}") from None


@dataclass(frozen=True)
class Matcher:
    """A label matcher; regexes are RE2 anchored as `^(?s:...)$`, as in PromQL/LogQL."""

    name: str
    type: MatchType
    value: str
    _compiled: re2._Regexp | None = field(default=None, compare=False, repr=False, hash=False)
    # RE2's Python binding costs microseconds per call: remember answers per label value
    _seen: dict[str, bool] = field(default_factory=dict, compare=False, repr=False, hash=False)

    def __post_init__(self) -> None:
        for name in ("name", "value"):  # plain str, whatever str subclass the caller passed
            object.__setattr__(self, name, str(getattr(self, name)))
        if self.type in (MatchType.RE, MatchType.NRE):
            object.__setattr__(self, "_compiled", compile_go_regexp(f"^(?s:{self.value})$"))

    def __reduce__(self):
        return (Matcher, (self.name, self.type, self.value))

    def matches(self, value: str | None) -> bool:
        """Does this matcher accept a label value? A missing label counts as ''."""
        value = value or ""
        if self.type is MatchType.EQ:
            return value == self.value
        if self.type is MatchType.NEQ:
            return value != self.value
        hit = self._seen.get(value)
        if hit is None:
            if len(self._seen) >= 4096:
                self._seen.clear()
            hit = self._seen[value] = self._compiled.search(value) is not None  # type: ignore[union-attr]
        return hit if self.type is MatchType.RE else not hit

    def matches_empty(self) -> bool:
        return self.matches("")

    def __str__(self) -> str:
        return f"{self.name}{self.type.value}{go_quote(self.value)}"


def labels_match(labels: Labels, matchers: Iterable[Matcher]) -> bool:
    return all(m.matches(labels.get(m.name)) for m in matchers)


# ---------------------------------------------------------------- entries and streams

class Entry(NamedTuple):
    """One log entry (a NamedTuple: the write path builds millions of them)."""

    ts: int  # nanoseconds since the Unix epoch
    line: str
    metadata: tuple[tuple[str, str], ...] = ()


@dataclass
class PushStream:
    labels: Labels
    entries: list[Entry]


# ---------------------------------------------------------------- tenants

MAX_TENANT_ID_BYTES = 150
_TENANT_BAD_CHAR = re.compile(r"[^0-9A-Za-z!\-_.*'()]")
DEFAULT_TENANT = "fake"


def validate_tenant_id(tenant: str) -> str:
    if not tenant:
        raise TenantError("no org id")
    if len(tenant.encode()) > MAX_TENANT_ID_BYTES:
        raise InvalidTenantError(f"tenant ID is too long: max {MAX_TENANT_ID_BYTES} characters")
    if tenant in (".", ".."):
        raise InvalidTenantError("tenant ID is '.' or '..'")
    bad = _TENANT_BAD_CHAR.search(tenant)
    if bad:
        raise InvalidTenantError(f"tenant ID '{tenant}' contains unsupported character '{bad.group()}'")
    return tenant


def parse_tenants(header: str | None, *, auth_enabled: bool) -> list[str]:
    """All tenants named by X-Scope-OrgID (several are separated by '|')."""
    if not auth_enabled:
        return [DEFAULT_TENANT]
    if not header:
        raise TenantError("no org id")
    tenants = [validate_tenant_id(t) for t in header.split("|")]
    return sorted(set(tenants))


def single_tenant(header: str | None, *, auth_enabled: bool) -> str:
    tenants = parse_tenants(header, auth_enabled=auth_enabled)
    if len(tenants) != 1:
        raise ValidationError("multiple org IDs present")
    return tenants[0]


# ---------------------------------------------------------------- time

NS = 1_000_000_000


def now_ns() -> int:
    import time

    return time.time_ns()


def parse_timestamp(value: str | None, default: int) -> int:
    """Query timestamps: ns integers (<=10 digits mean seconds), float seconds, or RFC 3339."""
    if value is None or value == "":
        return default
    if "." in value:
        try:
            seconds = float(value)
        except ValueError:
            pass
        else:
            if not math.isfinite(seconds):
                raise ValidationError(f"cannot parse {value!r} to a valid timestamp")
            frac, whole = math.modf(seconds)
            frac = round(frac * 1000) / 1000
            return int(whole) * NS + int(round(frac * NS))
    try:
        number = int(value)
    except ValueError:
        return parse_rfc3339(value)
    if len(value) <= 10:
        return number * NS
    return number


_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$"
)


def parse_rfc3339(value: str) -> int:
    match = _RFC3339.match(value.strip())
    if not match:
        raise ValidationError(f"cannot parse {value!r} to a valid timestamp")
    year, month, day, hour, minute, second, frac, zone = match.groups()
    try:
        tz = UTC
        if zone not in ("Z", "z"):
            sign = 1 if zone[0] == "+" else -1
            from datetime import timedelta

            tz = timezone(sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
        stamp = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), tzinfo=tz)
    except ValueError as err:
        raise ValidationError(f"cannot parse {value!r} to a valid timestamp") from err
    nanos = int((frac or "0").ljust(9, "0"))
    return int(stamp.timestamp()) * NS + nanos


def format_rfc3339(ts_ns: int) -> str:
    seconds, nanos = divmod(ts_ns, NS)
    base = datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")
    if nanos:
        base += "." + f"{nanos:09d}".rstrip("0")
    return base + "Z"


# Prometheus-style durations as used in LogQL ranges, offsets and query parameters.
_PROM_UNITS = {"ms": 1_000_000, "s": NS, "m": 60 * NS, "h": 3600 * NS, "d": 86400 * NS,
               "w": 7 * 86400 * NS, "y": 365 * 86400 * NS}
_PROM_DURATION = re.compile(r"^((\d+)y)?((\d+)w)?((\d+)d)?((\d+)h)?((\d+)m)?((\d+)s)?((\d+)ms)?$")


def parse_prom_duration(text: str) -> int:
    """`1h30m`, `5m`, `250ms`, `1d`, `2w`, `1y` -> nanoseconds (units in descending order)."""
    if text == "0":
        return 0
    match = _PROM_DURATION.match(text)
    if not text or not match or not any(match.groups()):
        raise ValidationError(f"not a valid duration string: {text!r}")
    total = 0
    for unit, group in (("y", 2), ("w", 4), ("d", 6), ("h", 8), ("m", 10), ("s", 12), ("ms", 14)):
        if match.group(group):
            total += int(match.group(group)) * _PROM_UNITS[unit]
    if total > (1 << 63) - 1:  # as the reference's parser: a duration is a signed 64-bit count
        raise ValidationError(f"not a valid duration string: {text!r}: duration out of range")
    return total


# Go's time.ParseDuration (exact integer arithmetic and Go's error messages), used by LogQL
# duration label filters, unwrap duration() and config values.
_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 10**9,
          "m": 60 * 10**9, "h": 3600 * 10**9}
_NUMBER = re.compile(r"(\d*)(?:\.(\d*))?")
_UNIT = re.compile(r"[^0-9.]*")


def parse_go_duration(text: str) -> int:
    """Nanoseconds; raises ValueError with Go's message on invalid input."""
    s = text
    neg = False
    if s and s[0] in "+-":
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise ValueError(f"time: invalid duration {go_quote(text)}")
    total = 0
    pos = 0
    while pos < len(s):
        if not (s[pos] == "." or s[pos].isdigit() and s[pos].isascii()):
            raise ValueError(f"time: invalid duration {go_quote(text)}")
        num = _NUMBER.match(s, pos)
        whole, frac = num.group(1), num.group(2)
        if not whole and not frac:
            raise ValueError(f"time: invalid duration {go_quote(text)}")
        pos = num.end()
        unit = _UNIT.match(s, pos).group(0)
        if not unit:
            raise ValueError(f"time: missing unit in duration {go_quote(text)}")
        if unit not in _UNITS:
            raise ValueError(f"time: unknown unit {go_quote(unit)} in duration {go_quote(text)}")
        pos += len(unit)
        scale = _UNITS[unit]
        total += int(whole or "0") * scale
        if frac:
            total += int(int(frac) * (scale / 10 ** len(frac)))
        if total > 2**63 - 1:
            raise ValueError(f"time: invalid duration {go_quote(text)}")
    return -total if neg else total



def format_go_duration(ns: int) -> str:
    """Go time.Duration.String(): 1h30m0s, 250ms, 1.5s, 0s."""
    if ns == 0:
        return "0s"
    neg = ns < 0
    u = -ns if neg else ns
    if u < NS:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if u >= size:
                out = _format_fraction(u, size) + unit
                break
    else:
        hours, rem = divmod(u, 3600 * NS)
        minutes, rem = divmod(rem, 60 * NS)
        out = _format_fraction(rem, NS) + "s"
        if hours:
            out = f"{hours}h{minutes}m" + out
        elif minutes:
            out = f"{minutes}m" + out
    return ("-" if neg else "") + out


def _format_fraction(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}." + f"{frac:0{digits}d}".rstrip("0")


def parse_step(text: str) -> int:
    """`step`/`interval` parameters: a duration or a float number of seconds."""
    try:
        seconds = float(text)
    except ValueError:
        return parse_prom_duration(text)
    if not math.isfinite(seconds):
        raise ValidationError(f"cannot parse {text!r} to a valid duration")
    return int(round(seconds * NS))


# Byte sizes as go-humanize ParseBytes accepts them: 20KB, 1MiB, 1.5 GB, 42, 42B.
_BYTES = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*$")
_BYTE_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3,
    "t": 1000**4, "tb": 1000**4, "p": 1000**5, "pb": 1000**5, "e": 1000**6, "eb": 1000**6,
    "ki": 1024, "kib": 1024, "mi": 1024**2, "mib": 1024**2, "gi": 1024**3, "gib": 1024**3,
    "ti": 1024**4, "tib": 1024**4, "pi": 1024**5, "pib": 1024**5, "ei": 1024**6, "eib": 1024**6,
}


def parse_bytes(text: str) -> int:
    match = _BYTES.match(text)
    if not match or match.group(2).lower() not in _BYTE_UNITS:
        raise ValueError(f"invalid byte size {text!r}")
    return int(float(match.group(1)) * _BYTE_UNITS[match.group(2).lower()])


@dataclass
class StreamColumns:
    """One stream's entries of a push, column-wise (how the write path carries them)."""

    labels: Labels
    ts: list[int]
    lines: list[str]
    metadata: list[list[tuple[str, str]] | None] | None = None  # None when no entry has any

    def __len__(self) -> int:
        return len(self.ts)

    def raw_bytes(self) -> int:
        return sum(map(len, self.lines))

    def to_push(self) -> PushStream:
        metadata = self.metadata or [None] * len(self.ts)
        return PushStream(self.labels, [Entry(t, line, tuple(md) if md else ())
                                        for t, line, md in zip(self.ts, self.lines, metadata)])

    def concat(self, other: StreamColumns) -> StreamColumns:
        if self.metadata is None and other.metadata is None:
            metadata = None
        else:
            metadata = (self.metadata or [None] * len(self.ts)) + (other.metadata or [None] * len(other.ts))
        return StreamColumns(self.labels, self.ts + other.ts, self.lines + other.lines, metadata)

    @classmethod
    def from_push(cls, stream: PushStream) -> StreamColumns:
        entries = stream.entries
        metadata = [list(e.metadata) if e.metadata else None for e in entries]
        return cls(stream.labels, [e.ts for e in entries], [e.line for e in entries],
                   metadata if any(m is not None for m in metadata) else None)
