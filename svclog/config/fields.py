"""Field declarations for config dataclasses and the scalar codecs behind them.

Durations are int nanoseconds and byte sizes int bytes in memory; YAML shows
them as strings. `kind` in a field's metadata says which codec applies, `key`
renames the YAML key (for Python keywords), `choices` restricts the value.
"""

from dataclasses import field
from typing import Any

from svclog.gocompat.durations import format_go_duration, format_prom_duration, parse_go_duration
from svclog.gocompat.humanize import parse_bytes
from svclog.model import ValidationError, parse_prom_duration

DURATION = "duration"  # Go time.Duration, printed like 1h0m0s
PROM_DURATION = "prom_duration"  # Prometheus model.Duration, printed like 1w
BYTES = "bytes"
TIMESTAMP = "timestamp"


def parse_duration(text: str) -> int:
    """Prometheus (`1w`, `30d`) or Go (`1h0m0s`, `1.5s`) duration -> nanoseconds."""
    text = text.strip()
    try:
        return parse_prom_duration(text)
    except ValidationError:
        return parse_go_duration(text)


def format_duration(ns: int, *, prom: bool) -> str:
    """A Prometheus duration as model.Duration prints it (`30d1h`, `4w`); a Go one as time.Duration
    does. A negative value or a millisecond fraction prints in Go's spelling, which parses back."""
    if not prom or ns < 0 or ns % 1_000_000:
        return format_go_duration(ns)
    return format_prom_duration(ns)


# Highest unit first; at equal rank the decimal unit wins (256000 -> 256KB, not 250KiB).
_BYTE_STEPS = [
    step
    for rank, p in reversed(list(enumerate("KMGTPE", start=1)))
    for step in ((1000**rank, f"{p}B"), (1024**rank, f"{p}iB"))
]


def format_bytes(n: int) -> str:
    """Exact, re-parseable size: 262144 -> 256KiB, 256000 -> 256KB, 1000 -> 1KB."""
    if n <= 0:
        return f"{n}B"
    for size, suffix in _BYTE_STEPS:
        if n % size == 0:
            return f"{n // size}{suffix}"
    return f"{n}B"


def duration(default: str, *, prom: bool = False) -> Any:
    return field(default=parse_duration(default), metadata={"kind": PROM_DURATION if prom else DURATION})


def size(default: str | int) -> Any:
    value = default if isinstance(default, int) else parse_bytes(default)
    return field(default=value, metadata={"kind": BYTES})


def timestamp() -> Any:
    """An optional RFC 3339 instant kept as text (None = unset)."""
    return field(default=None, metadata={"kind": TIMESTAMP})


def choice(default: str, *choices: str) -> Any:
    return field(default=default, metadata={"choices": (default, *choices)})


def renamed(default: Any, key: str) -> Any:
    return field(default=default, metadata={"key": key})


def seq(*items: Any) -> Any:
    return field(default=tuple(items))


def section(cls: type) -> Any:
    return field(default_factory=cls)


def free() -> Any:
    """A block kept as a plain mapping (accepted for compatibility, not interpreted)."""
    return field(default_factory=dict)
