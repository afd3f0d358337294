"""Go text/template's predefined functions (comparison, len, index, slice, print*, escapers).

`and`/`or` short-circuit and so live in the executor. Comparisons follow Go's
basic kinds: bool, int, float, string; mixing kinds is an error, not false.
"""

from __future__ import annotations

from collections.abc import Mapping

from svclog.logql.template.funcs_text import url_encode
from svclog.logql.template.gofmt import sprint, sprintf, sprintln
from svclog.logql.template.gotime import GoTime
from svclog.logql.template.values import GoInt64, format_v, truth, type_name


class BuiltinError(ValueError):
    pass


def _kind(v: object) -> str:
    t = type(v)
    if t is bool:
        return "bool"
    if t is int or t is GoInt64:
        return "int"
    if t is float:
        return "float"
    if t is str:
        return "string"
    if v is None:
        return "invalid"
    return "other"


def eq(a: object, *others: object) -> bool:
    if not others:
        raise BuiltinError("missing argument for comparison")
    ka = _kind(a)
    for b in others:
        kb = _kind(b)
        if ka != kb:
            if a is not None and b is not None:
                raise BuiltinError("incompatible types for comparison")
            continue
        if ka == "other":
            if isinstance(a, (Mapping, list)) or isinstance(b, (Mapping, list)):
                raise BuiltinError(f"non-comparable type {format_v(b)}: {type_name(b)}")
            if isinstance(a, GoTime) and isinstance(b, GoTime) and a == b:
                return True
        elif ka == "invalid" or a == b:
            return True
    return False


def ne(a: object, b: object) -> bool:
    return not eq(a, b)


def lt(a: object, b: object) -> bool:
    ka, kb = _kind(a), _kind(b)
    if ka in ("bool", "invalid", "other") or kb in ("bool", "invalid", "other"):
        raise BuiltinError("invalid type for comparison")
    if ka != kb:
        raise BuiltinError("incompatible types for comparison")
    return bool(a < b)  # type: ignore[operator]


def le(a: object, b: object) -> bool:
    return lt(a, b) or eq(a, b)


def length(item: object) -> int:
    if item is None:
        raise BuiltinError("len of nil pointer")
    if isinstance(item, str):
        return len(item.encode())
    if isinstance(item, (Mapping, list)):
        return len(item)
    raise BuiltinError(f"len of type {type_name(item)}")


def _index_arg(i: object, size: int) -> int:
    if i is None:
        raise BuiltinError("cannot index slice/array with nil")
    if type(i) not in (int, GoInt64):
        raise BuiltinError(f"cannot index slice/array with type {type_name(i)}")
    assert isinstance(i, int)
    if not 0 <= i < size:
        raise BuiltinError(f"index out of range: {i}")
    return int(i)


def index(labels: Mapping[str, str], item: object, *keys: object) -> object:
    if item is None:
        raise BuiltinError("index of untyped nil")
    for key in keys:
        if item is None:
            raise BuiltinError("index of nil pointer")
        if isinstance(item, str):
            item = item.encode()[_index_arg(key, len(item.encode()))]
        elif isinstance(item, list):
            item = item[_index_arg(key, len(item))]
        elif isinstance(item, Mapping):
            if not isinstance(key, str):
                raise BuiltinError(f"value has type {type_name(key)}; should be string")
            # map[string]string yields "" for a missing key, JSON maps nil.
            item = item.get(key, "" if item is labels else None)
        else:
            raise BuiltinError(f"can't index item of type {type_name(item)}")
    return item


def slice_(item: object, *idx: object) -> object:
    if item is None:
        raise BuiltinError("slice of untyped nil")
    if len(idx) > 3:
        raise BuiltinError(f"too many slice indexes: {len(idx)}")
    if isinstance(item, str):
        data: bytes | list[object] = item.encode()
        if len(idx) == 3:
            raise BuiltinError("cannot 3-index slice a string")
    elif isinstance(item, list):
        data = item
    else:
        raise BuiltinError(f"can't slice item of type {type_name(item)}")
    bounds = [0, len(data)]
    for i, x in enumerate(idx[:2]):
        bounds[i] = _index_arg(x, len(data) + 1)
    if bounds[0] > bounds[1]:
        raise BuiltinError(f"invalid slice index: {bounds[0]} > {bounds[1]}")
    out = data[bounds[0] : bounds[1]]
    return out.decode("utf-8", errors="replace") if isinstance(out, bytes) else out


def _eval_args(args: tuple[object, ...]) -> str:
    if len(args) == 1 and isinstance(args[0], str):
        return args[0]
    return sprint(["<no value>" if a is None else a for a in args])


def html_escape(*args: object) -> str:
    s = _eval_args(args)
    return (
        s.replace("&", "&amp;")
        .replace("'", "&#39;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&#34;")
        .replace("\x00", "\ufffd")
    )


_JS = {"\\": "\\\\", "'": "\\'", '"': '\\"', "<": "\\u003C", ">": "\\u003E", "&": "\\u0026", "=": "\\u003D"}


def js_escape(*args: object) -> str:
    out = []
    for c in _eval_args(args):
        if c in _JS:
            out.append(_JS[c])
        elif c < " " or not c.isprintable():
            out.append(f"\\u{ord(c):04X}")
        else:
            out.append(c)
    return "".join(out)


BUILTIN_FUNCS: dict[str, tuple[object, tuple[str, ...], str | None]] = {
    "not": (lambda v: not truth(v), ("any",), None),
    "len": (length, ("any",), None),
    "slice": (slice_, ("any",), "any"),
    "eq": (eq, ("any",), "any"),
    "ne": (ne, ("any", "any"), None),
    "lt": (lt, ("any", "any"), None),
    "le": (le, ("any", "any"), None),
    "gt": (lambda a, b: not le(a, b), ("any", "any"), None),
    "ge": (lambda a, b: not lt(a, b), ("any", "any"), None),
    "print": (lambda *a: sprint(list(a)), (), "any"),
    "printf": (lambda f, *a: sprintf(f, list(a)), ("str",), "any"),
    "println": (lambda *a: sprintln(list(a)), (), "any"),
    "html": (html_escape, (), "any"),
    "js": (js_escape, (), "any"),
    "urlquery": (lambda *a: url_encode(_eval_args(a)), (), "any"),
}
