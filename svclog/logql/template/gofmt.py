"""Go fmt for templates: Sprintf verbs and flags, Sprint, Sprintln (%q through svclog/gocompat/strconv).

Follows fmt's conversion behaviour: a verb that does not fit the operand prints
`%!d(string=x)`, missing operands `%!d(MISSING)`, extra ones `%!(EXTRA type=value)`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from svclog.gocompat.strconv import quote as go_quote
from svclog.gocompat.strconv import quote_rune as _quote_rune
from svclog.logql.template.gotime import GoTime
from svclog.logql.template.limits import check_output
from svclog.logql.template.values import GoInt64, format_float_shortest, format_v, type_name


def sprint(args: list[object]) -> str:
    """fmt.Sprint: spaces between operands when neither side is a string."""
    out: list[str] = []
    prev_str = False
    for i, a in enumerate(args):
        is_str = isinstance(a, str)
        if i and not is_str and not prev_str:
            out.append(" ")
        out.append(format_v(a))
        prev_str = is_str
    return "".join(out)


def sprintln(args: list[object]) -> str:
    return " ".join(format_v(a) for a in args) + "\n"


class _Spec:
    __slots__ = ("minus", "plus", "prec", "sharp", "space", "verb", "width", "zero")

    def __init__(self) -> None:
        self.minus = self.plus = self.sharp = self.space = self.zero = False
        self.width: int | None = None
        self.prec: int | None = None
        self.verb = "v"


def _pad(s: str, spec: _Spec, zero_ok: bool = True) -> str:
    if spec.width is None or len(s) >= spec.width:
        return s
    fill = spec.width - len(s)
    if spec.minus:
        return s + " " * fill
    if spec.zero and zero_ok:
        return "0" * fill + s
    return " " * fill + s


def _bad(verb: str, arg: object) -> str:
    if arg is None:
        return f"%!{verb}(<nil>)"
    return f"%!{verb}({type_name(arg)}={format_v(arg)})"


def _fmt_int(v: int, spec: _Spec) -> str:
    verb = spec.verb
    if verb == "c":
        return _pad(chr(v) if 0 <= v <= 0x10FFFF else "\ufffd", spec, False)
    if verb == "q":
        return _pad(_quote_rune(v, spec.plus), spec, False)
    if verb == "U":
        body = f"U+{v:04X}" if v >= 0 else f"U+{v & ((1 << 64) - 1):04X}"
        if spec.sharp and 0 <= v <= 0x10FFFF and chr(v).isprintable():
            body += f" '{chr(v)}'"
        return _pad(body, spec, False)
    base = {"d": 10, "v": 10, "b": 2, "o": 8, "O": 8, "x": 16, "X": 16}[verb]
    formats: dict[int, Callable[[int], str]] = {
        10: str,
        2: lambda x: format(x, "b"),
        8: lambda x: format(x, "o"),
        16: lambda x: format(x, "x" if verb == "x" else "X"),
    }
    digits = formats[base](abs(v))
    if spec.prec is not None:
        digits = "" if spec.prec == 0 and v == 0 else digits.rjust(spec.prec, "0")
    prefix = ""
    if verb == "O" or (spec.sharp and verb == "o" and not digits.startswith("0")):
        prefix = "0o" if verb == "O" else "0"
    elif spec.sharp and verb in ("x", "X", "b"):
        prefix = {"x": "0x", "X": "0X", "b": "0b"}[verb]
    sign = "-" if v < 0 else "+" if spec.plus else " " if spec.space else ""
    body = prefix + digits
    if spec.zero and not spec.minus and spec.prec is None and spec.width:
        body = body.rjust(spec.width - len(sign), "0")
    return _pad(sign + body, spec, False)


def _fmt_float(v: float, spec: _Spec) -> str:
    verb = spec.verb
    if math.isnan(v) or math.isinf(v):
        text = "NaN" if math.isnan(v) else ("+Inf" if v > 0 else "-Inf")
        if math.isnan(v) and (spec.plus or spec.space):
            text = ("+" if spec.plus else " ") + text
        elif text == "+Inf" and not spec.plus:
            text = " Inf" if spec.space else "+Inf"
        return _pad(text, spec, False)
    if verb in ("v", "g", "G") and spec.prec is None:
        body = format_float_shortest(abs(v), "E" if verb == "G" else "e")
    elif verb in ("v", "g", "G"):
        body = f"{abs(v):{'#' if spec.sharp else ''}.{max(spec.prec or 0, 1)}{'G' if verb == 'G' else 'g'}}"
    elif verb in ("e", "E", "f", "F"):
        prec = 6 if spec.prec is None else spec.prec
        body = f"{abs(v):{'#' if spec.sharp else ''}.{prec}{verb}}"
    elif verb in ("x", "X"):
        body = abs(v).hex()
        body = body.upper().replace("0X", "0X") if verb == "X" else body
    else:
        return _bad(verb, v)
    negative = v < 0 or (v == 0 and math.copysign(1.0, v) < 0)
    sign = "-" if negative else "+" if spec.plus else " " if spec.space else ""
    if spec.zero and not spec.minus and spec.width:
        body = body.rjust(spec.width - len(sign), "0")
    return _pad(sign + body, spec, False)


def _fmt_str(s: str, spec: _Spec) -> str:
    verb = spec.verb
    if verb in ("s", "v"):
        return _pad(s if spec.prec is None else s[: spec.prec], spec)
    if verb == "q":
        if spec.sharp and "`" not in s and all(c == "\t" or c.isprintable() for c in s):
            return _pad("`" + s + "`", spec)
        return _pad(go_quote(s, spec.plus), spec)
    if verb in ("x", "X"):
        data = s.encode()
        if spec.prec is not None:
            data = data[: spec.prec]
        hexed = [format(b, "02x" if verb == "x" else "02X") for b in data]
        prefix = ("0x" if verb == "x" else "0X") if spec.sharp else ""
        if spec.space:
            return _pad(" ".join(prefix + h for h in hexed), spec)
        return _pad(prefix + "".join(hexed), spec)
    return _bad(verb, s)


def format_arg(arg: object, spec: _Spec) -> str:
    verb = spec.verb
    if verb == "T":
        return _pad(type_name(arg), spec, False)
    t = type(arg)
    if t is str:
        return _fmt_str(arg, spec)  # type: ignore[arg-type]
    if t is bool:
        if verb in ("t", "v"):
            return _pad("true" if arg else "false", spec, False)
        return _bad(verb, arg)
    if t is int or t is GoInt64:
        if verb in "bcdoOqxXUv":
            return _fmt_int(int(arg), spec)  # type: ignore[call-overload]
        return _bad(verb, arg)
    if t is float:
        return _fmt_float(arg, spec)  # type: ignore[arg-type]
    if arg is None:
        return _pad("<nil>", spec, False) if verb == "v" else _bad(verb, None)
    if t is GoTime:
        if verb in ("v", "s", "q", "x", "X"):
            return _fmt_str(str(arg), spec)
        return _bad(verb, arg)
    if isinstance(arg, Mapping):
        inner = " ".join(f"{format_arg(k, spec)}:{format_arg(arg[k], spec)}" for k in sorted(arg))
        return "map[" + inner + "]"
    if isinstance(arg, list):
        return "[" + " ".join(format_arg(x, spec) for x in arg) + "]"
    return _pad(str(arg), spec)


def _too_large(x: int) -> bool:
    """Go's fmt refuses widths and precisions beyond a million (a crazy long number, most likely)."""
    return not -1_000_000 <= x <= 1_000_000


def _read_int(fmt: str, i: int) -> tuple[int | None, int]:
    """Go's parsenum: ASCII digits; on overflow no number and the rest of the format consumed."""
    j, num = i, 0
    while j < len(fmt) and "0" <= fmt[j] <= "9":
        if _too_large(num):
            return None, len(fmt)
        num = num * 10 + ord(fmt[j]) - 48
        j += 1
    return (num if j > i else None), j


class _Printf:
    """One Sprintf call: walks the format, consuming operands as Go's doPrintf does."""

    def __init__(self, fmt: str, args: list[object]) -> None:
        self.fmt, self.args = fmt, args
        self.i = self.argn = 0
        self.reordered = False
        self.out: list[str] = []

    def run(self) -> str:
        fmt, n = self.fmt, len(self.fmt)
        while self.i < n:
            j = fmt.find("%", self.i)
            if j < 0:
                self.out.append(fmt[self.i :])
                break
            self.out.append(fmt[self.i : j])
            self.i = j + 1
            spec = self.spec()
            if self.i >= n:
                self.out.append("%!(NOVERB)")
                break
            spec.verb = fmt[self.i]
            self.i += 1
            check_output("printf", max(spec.width or 0, spec.prec or 0))  # before any padding is built
            self.verb(spec)
        if not self.reordered and self.argn < len(self.args):
            extra = ", ".join("<nil>" if a is None else f"{type_name(a)}={format_v(a)}" for a in self.args[self.argn :])
            self.out.append(f"%!(EXTRA {extra})")
        return "".join(self.out)

    def spec(self) -> _Spec:
        fmt, n, spec = self.fmt, len(self.fmt), _Spec()
        while self.i < n and fmt[self.i] in "+-# 0":
            c = fmt[self.i]
            spec.plus |= c == "+"
            spec.minus |= c == "-"
            spec.sharp |= c == "#"
            spec.space |= c == " "
            spec.zero |= c == "0"
            self.i += 1
        self.arg_index()
        if fmt[self.i : self.i + 1] == "*":
            spec.width = self.star("%!(BADWIDTH)")
            if spec.width is not None and spec.width < 0:
                spec.minus, spec.width = True, -spec.width
        else:
            spec.width, self.i = _read_int(fmt, self.i)
        if fmt[self.i : self.i + 1] == ".":
            self.i += 1
            self.arg_index()
            if fmt[self.i : self.i + 1] == "*":
                prec = self.star("%!(BADPREC)")
                spec.prec = prec if prec is not None and prec >= 0 else None
            else:
                prec, self.i = _read_int(fmt, self.i)
                spec.prec = prec or 0
        self.arg_index()
        return spec

    def star(self, bad: str) -> int | None:
        """A `*` width or precision taken from the operands."""
        self.i += 1
        arg = self.args[self.argn] if 0 <= self.argn < len(self.args) else None
        self.argn += 1
        if type(arg) in (int, GoInt64) and isinstance(arg, int) and not _too_large(int(arg)):
            return int(arg)
        self.out.append(bad)
        return None

    def arg_index(self) -> None:
        """An explicit `[n]` operand index (1-based); -1 marks a bad index."""
        fmt, i = self.fmt, self.i
        if i >= len(fmt) or fmt[i] != "[":
            return
        self.reordered = True
        close = fmt.find("]", i)
        idx, j = _read_int(fmt, i + 1)
        if close < 0 or j != close or idx is None or not 1 <= idx <= len(self.args):
            self.argn, self.i = -1, (close + 1 if close >= 0 else len(fmt))
            return
        self.argn, self.i = idx - 1, close + 1

    def verb(self, spec: _Spec) -> None:
        verb = spec.verb
        if verb == "%":
            self.out.append("%")
        elif self.argn < 0:
            self.out.append(f"%!{verb}(BADINDEX)")
            self.argn = len(self.args)
        elif self.argn >= len(self.args):
            self.out.append(f"%!{verb}(MISSING)")
        else:
            self.out.append(format_arg(self.args[self.argn], spec))
            self.argn += 1


def sprintf(fmt: str, args: list[object]) -> str:
    """fmt.Sprintf."""
    return _Printf(fmt, args).run()
