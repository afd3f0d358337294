"""Leaf data model: labels, matchers, entries, tenants, time/duration parsing, user errors.

Everything here is plain Python with no I/O; every other package may import it. Go's own
spellings (quoting, Go durations, byte sizes) live in svclog/gocompat/, below this module.
"""

from __future__ import annotations

import enum
import hashlib
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timezone
from typing import NamedTuple, Protocol

import re2

# Go durations stay importable from here (callers' time API); their one implementation is gocompat's
from svclog.gocompat.durations import format_go_duration, parse_go_duration  # noqa: F401
from svclog.gocompat.strconv import quote as go_quote

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


class Labels:
    """An immutable, sorted label set; hashable, usable as a dict key."""

    __slots__ = ("_items", "_hash", "_str")

    def __init__(self, items: Iterable[tuple[str, str]] = ()):
        self._items: tuple[tuple[str, str], ...] = tuple(sorted(dict(items).items()))
        self._hash = hash(self._items)
        self._str: str | None = None

    def __reduce__(self) -> tuple[type[Labels], tuple[tuple[tuple[str, str], ...]]]:
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

    def __iter__(self) -> Iterator[tuple[str, str]]:
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

    def without_empty(self) -> Labels:
        """Without its empty-valued labels, as Prometheus' labels.Builder rebuilds a set."""
        if all(v for _, v in self._items):
            return self
        return Labels((k, v) for k, v in self._items if v)

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


def compile_go_regexp(pattern: str) -> re2._Regexp[str]:
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
    _compiled: re2._Regexp[str] | None = field(default=None, compare=False, repr=False, hash=False)
    # RE2's Python binding costs microseconds per call: remember answers per label value
    _seen: dict[str, bool] = field(default_factory=dict, compare=False, repr=False, hash=False)

    def __post_init__(self) -> None:
        for name in ("name", "value"):  # plain str, whatever str subclass the caller passed
            object.__setattr__(self, name, str(getattr(self, name)))
        if self.type in (MatchType.RE, MatchType.NRE):
            object.__setattr__(self, "_compiled", compile_go_regexp(f"^(?s:{self.value})$"))

    def __reduce__(self) -> tuple[Callable[[str, MatchType, str], Matcher], tuple[str, MatchType, str]]:
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
    """The reference's tenant ID rule: characters first, then length, then '.'/'..'.

    An empty ID passes here, as in the reference: `a|` names the tenants "" and "a"."""
    bad = _TENANT_BAD_CHAR.search(tenant)
    if bad:
        raise InvalidTenantError(f"tenant ID '{tenant}' contains unsupported character '{bad.group()}'")
    if len(tenant.encode()) > MAX_TENANT_ID_BYTES:
        raise InvalidTenantError(f"tenant ID is too long: max {MAX_TENANT_ID_BYTES} characters")
    if tenant in (".", ".."):
        raise InvalidTenantError("tenant ID is '.' or '..'")
    return tenant


def _without_subtenant(org_id: str) -> str:
    # `tenant:subtenant` names the tenant; the subtenant part is not validated (as the reference)
    return org_id.split(":", 1)[0]


def parse_tenants(header: str | None, *, auth_enabled: bool) -> list[str]:
    """All tenants a read names in X-Scope-OrgID: '|'-separated, each without its `:subtenant`,
    validated, sorted and de-duplicated. Empty parts are tenants too (`a|` reads "" and "a"),
    but an empty tenant alone is refused, as the reference's query scheduler refuses it."""
    if not auth_enabled:
        return [DEFAULT_TENANT]
    if not header:
        raise TenantError("no org id")
    tenants = sorted({validate_tenant_id(_without_subtenant(part)) for part in header.split("|")})
    if tenants == [""]:
        raise ValidationError("no queue found: empty tenant is not allowed")
    return tenants


def single_tenant(header: str | None, *, auth_enabled: bool) -> str:
    """The one tenant of a write (or a tail, rules, deletes): the first '|'-separated part without
    its `:subtenant`; any other part must name the same tenant, else 'multiple org IDs present'.

    The reference accepts an empty tenant here (`|`, `:x`); svclog refuses it as no org id,
    since an empty name has no place in its storage layout."""
    if not auth_enabled:
        return DEFAULT_TENANT
    if not header:
        raise TenantError("no org id")
    first, *rest = header.split("|")
    tenant = validate_tenant_id(_without_subtenant(first))
    if any(_without_subtenant(part) != tenant for part in rest):
        raise ValidationError("multiple org IDs present")
    if not tenant:
        raise TenantError("no org id")
    return tenant


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


_RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$")


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
_PROM_UNITS = {
    "ms": 1_000_000,
    "s": NS,
    "m": 60 * NS,
    "h": 3600 * NS,
    "d": 86400 * NS,
    "w": 7 * 86400 * NS,
    "y": 365 * 86400 * NS,
}
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


def parse_step(text: str) -> int:
    """`step`/`interval` parameters: a duration or a float number of seconds."""
    try:
        seconds = float(text)
    except ValueError:
        return parse_prom_duration(text)
    if not math.isfinite(seconds):
        raise ValidationError(f"cannot parse {text!r} to a valid duration")
    return int(round(seconds * NS))


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

    # The write path's stream interface (ColumnStream), shared with the ingester's Arrow-backed
    # BatchStream: the distributor calls these and never reads a whole column of another form.

    def ts_bounds(self) -> tuple[int, int]:
        return min(self.ts), max(self.ts)

    def has_metadata(self) -> bool:
        return self.metadata is not None

    def fits_line_size(self, limit: int) -> bool:
        """Every line is at most `limit` UTF-8 bytes."""
        longest = max(map(len, self.lines), default=0)
        # len() counts characters; a UTF-8 character is at most 4 bytes
        return longest * 4 <= limit or (longest <= limit and max(len(line.encode()) for line in self.lines) <= limit)

    def columns(self) -> StreamColumns:
        return self

    def sample(self, stride: int) -> StreamColumns:
        """Every `stride`-th entry, without metadata (the pattern tee's copy)."""
        return StreamColumns(self.labels, self.ts[::stride], self.lines[::stride], None)

    def to_push(self) -> PushStream:
        metadata = self.metadata or [None] * len(self.ts)
        return PushStream(
            self.labels, [Entry(t, line, tuple(md) if md else ()) for t, line, md in zip(self.ts, self.lines, metadata)]
        )

    def concat(self, other: ColumnStream) -> StreamColumns:
        other = other.columns()
        if self.metadata is None and other.metadata is None:
            metadata = None
        else:
            metadata = (self.metadata or [None] * len(self.ts)) + (other.metadata or [None] * len(other.ts))
        return StreamColumns(self.labels, self.ts + other.ts, self.lines + other.lines, metadata)

    @classmethod
    def from_push(cls, stream: PushStream) -> StreamColumns:
        entries = stream.entries
        metadata = [list(e.metadata) if e.metadata else None for e in entries]
        return cls(
            stream.labels,
            [e.ts for e in entries],
            [e.line for e in entries],
            metadata if any(m is not None for m in metadata) else None,
        )


class ColumnStream(Protocol):
    """One stream of a push as the write path carries it: StreamColumns (Python lists) or the
    ingester's BatchStream (a slice of one Arrow batch for the whole push)."""

    labels: Labels

    def __len__(self) -> int: ...
    def raw_bytes(self) -> int: ...
    def ts_bounds(self) -> tuple[int, int]: ...
    def has_metadata(self) -> bool: ...
    def fits_line_size(self, limit: int) -> bool: ...
    def columns(self) -> StreamColumns: ...
    def sample(self, stride: int) -> StreamColumns: ...
    def to_push(self) -> PushStream: ...
    def concat(self, other: ColumnStream) -> StreamColumns: ...


Span = tuple[int, int]  # [lo, hi] nanoseconds, both inclusive: the oldest and newest entry of some data


def merge_spans(spans: Iterable[Span]) -> list[Span]:
    """The spans sorted, overlapping ones joined (a tenant's chunks overlap a lot)."""
    merged: list[Span] = []
    for lo, hi in sorted(spans):
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged
