"""Generic mapping <-> frozen dataclass conversion driven by type hints and field metadata."""

import copy
import dataclasses
import datetime
import difflib
import functools
import types
import typing
from typing import Any

from svclog.gocompat.humanize import parse_bytes
from svclog.model import ValidationError, parse_rfc3339

from .errors import ConfigError
from .fields import (
    BYTES,
    DURATION,
    PROM_DURATION,
    TIMESTAMP,
    format_bytes,
    format_duration,
    parse_duration,
)

NoneType = type(None)


@functools.cache
def hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def yaml_key(f: dataclasses.Field) -> str:
    return f.metadata.get("key", f.name)


def fields_by_key(cls: type) -> dict[str, dataclasses.Field]:
    return {yaml_key(f): f for f in dataclasses.fields(cls)}


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def unwrap_optional(tp: Any) -> tuple[Any, bool]:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not NoneType]
        if len(args) == 1:
            return args[0], True
    return tp, False


def unknown_key(path: str, key: str, known: typing.Iterable[str]) -> ConfigError:
    message = f"unknown key '{join(path, key)}'"
    close = difflib.get_close_matches(key, list(known), n=1)
    if close:
        message += f" (did you mean '{close[0]}'?)"
    return ConfigError(message)


def bad_value(path: str, expected: str, raw: Any) -> ConfigError:
    return ConfigError(f"invalid value for '{path}': expected {expected}, got {type(raw).__name__} {raw!r}")


def decode(cls: type, data: Any, path: str = "", base: Any = None) -> Any:
    """Build `cls` from a mapping; absent keys keep `base`'s values (defaults when None)."""
    if base is None:
        base = cls()
    if data is None:
        return base
    if not isinstance(data, dict):
        raise bad_value(path or "<root>", "a mapping", data)
    known = fields_by_key(cls)
    changes = {}
    for key, raw in data.items():
        f = known.get(str(key))
        if f is None:
            raise unknown_key(path, str(key), known)
        changes[f.name] = coerce(hints(cls)[f.name], f.metadata, raw, join(path, str(key)), getattr(base, f.name))
    try:
        return dataclasses.replace(base, **changes)
    except ConfigError:
        raise
    except (TypeError, ValueError) as err:
        raise ConfigError(f"invalid '{path or '<root>'}': {err}") from err


def coerce(tp: Any, meta: Any, raw: Any, path: str, current: Any = None) -> Any:
    tp, optional = unwrap_optional(tp)
    if raw is None:
        if optional:
            return None
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            return current if current is not None else tp()
        raise bad_value(path, _describe(tp, meta), raw)
    kind = meta.get("kind")
    if kind is not None:
        value = _scalar_kind(kind, raw, path)
    elif isinstance(tp, type) and dataclasses.is_dataclass(tp):
        value = decode(tp, raw, path, current if dataclasses.is_dataclass(current) else None)
    elif typing.get_origin(tp) is tuple:
        value = _tuple(typing.get_args(tp)[0], raw, path)
    elif tp is dict or typing.get_origin(tp) is dict:
        value = _mapping(tp, raw, path)
    else:
        value = _plain(tp, raw, path)
    choices = meta.get("choices")
    if choices and value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise ConfigError(f"invalid value for '{path}': {value!r} is not one of {allowed}")
    return value


def _describe(tp: Any, meta: Any) -> str:
    kind = meta.get("kind")
    if kind in (DURATION, PROM_DURATION):
        return "a duration such as 30s, 5m, 1h or 1w"
    if kind == BYTES:
        return "a byte size such as 1024, 256KB or 1MiB"
    if kind == TIMESTAMP:
        return "an RFC 3339 timestamp"
    if dataclasses.is_dataclass(tp) or typing.get_origin(tp) is dict or tp is dict:
        return "a mapping"
    if typing.get_origin(tp) is tuple:
        return "a list"
    return getattr(tp, "__name__", str(tp))


def _scalar_kind(kind: str, raw: Any, path: str) -> Any:
    if kind in (DURATION, PROM_DURATION):
        if isinstance(raw, int) and not isinstance(raw, bool) and raw == 0:
            return 0
        if isinstance(raw, str):
            try:
                return parse_duration(raw)
            except ValueError:
                pass
        raise bad_value(path, "a duration such as 30s, 5m, 1h or 1w", raw)
    if kind == BYTES:
        if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0:
            return raw
        if isinstance(raw, str):
            try:
                return parse_bytes(raw)
            except ValueError:
                pass
        raise bad_value(path, "a byte size such as 1024, 256KB or 1MiB", raw)
    if isinstance(raw, datetime.datetime):
        if raw.tzinfo is None:
            raw = raw.replace(tzinfo=datetime.UTC)
        return raw.isoformat().replace("+00:00", "Z")
    if isinstance(raw, str):
        try:
            parse_rfc3339(raw)
        except ValidationError:
            pass
        else:
            return raw
    raise bad_value(path, "an RFC 3339 timestamp", raw)


def _tuple(elem: Any, raw: Any, path: str) -> tuple:
    if isinstance(raw, str) and elem is str:
        raw = [part.strip() for part in raw.split(",") if part.strip()]
    if not isinstance(raw, list | tuple):
        raise bad_value(path, "a list", raw)
    return tuple(coerce(elem, {}, item, f"{path}[{i}]") for i, item in enumerate(raw))


def _mapping(tp: Any, raw: Any, path: str) -> dict:
    if not isinstance(raw, dict):
        raise bad_value(path, "a mapping", raw)
    args = typing.get_args(tp)
    if args and isinstance(args[1], type) and dataclasses.is_dataclass(args[1]):
        return {str(k): decode(args[1], v, join(path, str(k))) for k, v in raw.items()}
    return copy.deepcopy(raw)


def _plain(tp: Any, raw: Any, path: str) -> Any:
    if tp is Any:
        return raw
    if tp is bool:
        if isinstance(raw, bool):
            return raw
    elif tp is int:
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
    elif tp is float:
        if isinstance(raw, int | float) and not isinstance(raw, bool):
            return float(raw)
    elif tp is str:
        if isinstance(raw, str):
            return raw
        if isinstance(raw, datetime.date):
            return raw.isoformat()
        if isinstance(raw, int | float) and not isinstance(raw, bool):
            return str(raw)
    raise bad_value(path, _describe(tp, {}), raw)


def encode(obj: Any) -> dict[str, Any]:
    """Dataclass -> plain mapping in YAML shape (durations and sizes as strings)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        out[yaml_key(f)] = _encode_value(getattr(obj, f.name), f.metadata)
    return out


def _encode_value(value: Any, meta: Any) -> Any:
    if value is None:
        return None
    kind = meta.get("kind")
    if kind in (DURATION, PROM_DURATION):
        return format_duration(value, prom=kind == PROM_DURATION)
    if kind == BYTES:
        return format_bytes(value)
    if dataclasses.is_dataclass(value):
        return encode(value)
    if isinstance(value, tuple | list):
        return [_encode_value(v, {}) for v in value]
    if isinstance(value, dict):
        return {k: _encode_value(v, {}) for k, v in value.items()}
    return value
