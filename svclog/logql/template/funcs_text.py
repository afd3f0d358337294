"""String, encoding and regexp template functions (Go `strings`, Sprig, Loki additions).

Each function takes already type-checked arguments in Go parameter order.
"""

from __future__ import annotations

import base64
import binascii
import json

from svclog.logql.template.goregex import count_matches, replace_all
from svclog.logql.template.limits import check_output

# unicode.IsSpace: what strings.TrimSpace trims and strings.Title splits on.
GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
_URL_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~")


def _map_case(s: str, upper: bool) -> str:
    # Go maps rune by rune (no 'ß' -> 'SS' expansion as Python's full case mapping does).
    if s.isascii():
        return s.upper() if upper else s.lower()
    out = []
    for c in s:
        m = c.upper() if upper else c.lower()
        out.append(m if len(m) == 1 else c)
    return "".join(out)


def to_upper(s: str) -> str:
    return _map_case(s, True)


def to_lower(s: str) -> str:
    return _map_case(s, False)


def _is_separator(c: str) -> bool:
    if c < "\x80":
        return not (c.isalnum() or c == "_")
    if c.isalpha() or c.isdigit():
        return False
    return c in GO_SPACE


def title(s: str) -> str:
    """strings.Title: upper-case the first letter of each word, leave the rest."""
    out, prev_sep = [], True
    for c in s:
        if prev_sep:
            t = c.title()
            out.append(t if len(t) == 1 else c)
        else:
            out.append(c)
        prev_sep = _is_separator(c)
    return "".join(out)


def replaced_size(s: str, old: str, new: str, n: int = -1) -> int:
    """The length of s with `old` replaced by `new` (at most n times), without building it."""
    found = len(s) + 1 if old == "" else s.count(old)
    if n >= 0:
        found = min(found, n)
    return len(s) + found * (len(new) - len(old))


def go_replace(s: str, old: str, new: str, n: int) -> str:
    check_output("Replace", replaced_size(s, old, new, n))
    return s.replace(old, new, n if n >= 0 else -1)


def sprig_replace(old: str, new: str, s: str) -> str:
    check_output("replace", replaced_size(s, old, new))
    return s.replace(old, new)


def trim_space(s: str) -> str:
    return s.strip(GO_SPACE)


def repeat(count: int, s: str) -> str:
    if count < 0:
        raise ValueError("strings: negative Repeat count")
    check_output("repeat", count * len(s))
    return s * count


def trunc(c: int, s: str) -> str:
    """Loki's rune-safe trunc: keep the first c runes, or the last -c."""
    n = len(s)
    if c < 0 and n + c > 0:
        return s[n + c :]
    if 0 <= c < n:
        return s[:c]
    return s


def substr(start: int, end: int, s: str) -> str:
    """Loki's rune-safe substr, clamping instead of panicking."""
    n = len(s)
    end, start = min(end, n), min(start, n)
    if start < 0:
        return "" if end < 0 else s[:end]
    if end < 0:
        return s[start:]
    return "" if start > end else s[start:end]


def indent(spaces: int, s: str) -> str:
    check_output("indent", len(s) + max(spaces, 0) * (s.count("\n") + 1))
    pad = " " * spaces
    return pad + s.replace("\n", "\n" + pad)


def nindent(spaces: int, s: str) -> str:
    return "\n" + indent(spaces, s)


def align_left(count: int, s: str) -> str:
    check_output("alignLeft", count)
    n = len(s)
    if count < 0 or count == n:
        return s
    return s + " " * (count - n) if count > n else s[:count]


def align_right(count: int, s: str) -> str:
    check_output("alignRight", count)
    n = len(s)
    if count < 0 or count == n:
        return s
    return " " * (count - n) + s if count > n else s[n - count :]


def b64enc(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


def b64dec(s: str) -> str:
    """Sprig b64dec: the decoded text, or the decoding error's text."""
    data = s.replace("\r", "").replace("\n", "")
    for i, c in enumerate(data):
        if not (c.isascii() and (c.isalnum() or c in "+/=")):
            return f"illegal base64 data at input byte {i}"
    try:
        return base64.b64decode(data, validate=True).decode("utf-8", errors="replace")
    except (binascii.Error, ValueError):
        return f"illegal base64 data at input byte {max(len(data) - len(data) % 4, 0)}"


def url_encode(s: str) -> str:
    """url.QueryEscape."""
    out = []
    for b in s.encode():
        if b in _URL_SAFE:
            out.append(chr(b))
        elif b == 0x20:
            out.append("+")
        else:
            out.append(f"%{b:02X}")
    return "".join(out)


def url_decode(s: str) -> str:
    """url.QueryUnescape; raises on a malformed escape."""
    out = bytearray()
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == "%":
            h = s[i + 1 : i + 3]
            if len(h) < 2 or not all(x in "0123456789abcdefABCDEF" for x in h):
                raise ValueError(f'invalid URL escape "{s[i : i + 3]}"')
            out.append(int(h, 16))
            i += 3
            continue
        out += b" " if c == "+" else c.encode()
        i += 1
    return out.decode("utf-8", errors="replace")


def from_json(s: str) -> object:
    """Sprig fromJson: numbers become float64; invalid JSON gives nil."""

    def reject(_: str) -> object:
        raise ValueError("not JSON")

    try:
        return json.loads(s, parse_int=float, parse_constant=reject)
    except (ValueError, RecursionError):
        return None


def regex_replace_all(regex: str, s: str, repl: str) -> str:
    return replace_all(regex, s, repl)


def regex_replace_all_literal(regex: str, s: str, repl: str) -> str:
    return replace_all(regex, s, repl, literal=True)


def count(regex: str, s: str) -> int:
    return count_matches(regex, s)


TEXT_FUNCS: dict[str, tuple[object, tuple[str, ...]]] = {
    "ToLower": (to_lower, ("str",)),
    "ToUpper": (to_upper, ("str",)),
    "Replace": (go_replace, ("str", "str", "str", "int")),
    "Trim": (lambda s, cut: s.strip(cut), ("str", "str")),
    "TrimLeft": (lambda s, cut: s.lstrip(cut), ("str", "str")),
    "TrimRight": (lambda s, cut: s.rstrip(cut), ("str", "str")),
    "TrimPrefix": (lambda s, p: s.removeprefix(p), ("str", "str")),
    "TrimSuffix": (lambda s, p: s.removesuffix(p), ("str", "str")),
    "TrimSpace": (trim_space, ("str",)),
    "lower": (to_lower, ("str",)),
    "upper": (to_upper, ("str",)),
    "title": (title, ("str",)),
    "trunc": (trunc, ("int", "str")),
    "substr": (substr, ("int", "int", "str")),
    "contains": (lambda sub, s: sub in s, ("str", "str")),
    "hasPrefix": (lambda p, s: s.startswith(p), ("str", "str")),
    "hasSuffix": (lambda p, s: s.endswith(p), ("str", "str")),
    "indent": (indent, ("int", "str")),
    "nindent": (nindent, ("int", "str")),
    "replace": (sprig_replace, ("str", "str", "str")),
    "repeat": (repeat, ("int", "str")),
    "trim": (trim_space, ("str",)),
    "trimAll": (lambda cut, s: s.strip(cut), ("str", "str")),
    "trimPrefix": (lambda p, s: s.removeprefix(p), ("str", "str")),
    "trimSuffix": (lambda p, s: s.removesuffix(p), ("str", "str")),
    "alignLeft": (align_left, ("int", "str")),
    "alignRight": (align_right, ("int", "str")),
    "b64enc": (b64enc, ("str",)),
    "b64dec": (b64dec, ("str",)),
    "urlencode": (url_encode, ("str",)),
    "urldecode": (url_decode, ("str",)),
    "fromJson": (from_json, ("str",)),
    "regexReplaceAll": (regex_replace_all, ("str", "str", "str")),
    "regexReplaceAllLiteral": (regex_replace_all_literal, ("str", "str", "str")),
    "count": (count, ("str", "str")),
}
