"""A small Go-template expander for rule labels and annotations.

Covers what alert templates use in practice: `{{ $labels.x }}`, `{{ $value }}`,
`{{ .Labels.x }}`, `{{ .Value }}`, `{{ $externalLabels.x }}`, `{{ $externalURL }}`,
pipelines such as `{{ $value | humanize }}` or `{{ printf "%.2f" $value }}`, `index`,
trim markers (`{{-`, `-}}`) and comments. Control actions (`if`, `range`, `with`,
`define`, ...) are refused when a rule is uploaded, so nothing is silently mis-rendered.
A missing label expands to the empty string, as with the reference's `missingkey=zero`.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from svclog.logql.template.gofmt import sprint, sprintf
from svclog.logql.template.goregex import replace_all


class TemplateError(ValueError):
    """A label or annotation template that cannot be parsed or run."""


@dataclass(frozen=True)
class TemplateData:
    labels: Mapping[str, str]
    value: float
    external_labels: Mapping[str, str] = field(default_factory=dict)
    external_url: str = ""


_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.DOTALL)
_TOKEN = re.compile(
    r"""\s*(?:
    (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<raw>`[^`]*`)
  | (?P<num>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
  | (?P<var>\$[A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)
  | (?P<field>(?:\.[A-Za-z0-9_]+)+|\.)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<pipe>\|)
  | (?P<other>\S)
)""",
    re.VERBOSE,
)
_KEYWORDS = {"if", "else", "end", "range", "with", "define", "template", "block", "break", "continue"}
_VARIABLES = {"$", "$labels", "$externalLabels", "$externalURL", "$value"}


# ---------------------------------------------------------------- functions


def _to_float(v: object) -> float:
    if isinstance(v, bool):
        raise TemplateError("cannot convert bool to a number")
    if isinstance(v, (int, float)):
        return float(v)
    try:
        return float(str(v))
    except ValueError:
        raise TemplateError(f"cannot convert {v!r} to a number") from None


def _humanize(v: object, base: float = 1000.0, big: str = "kMGTPEZY", small: str = "munpfazy") -> str:
    x = _to_float(v)
    if x == 0 or math.isnan(x) or math.isinf(x):
        return sprintf("%.4g", [x])
    prefix = ""
    if abs(x) >= 1:
        for p in big:
            if abs(x) < base:
                break
            prefix, x = p, x / base
    elif small:
        for p in small:
            if abs(x) >= 1:
                break
            prefix, x = p, x * base
    return sprintf("%.4g%s", [x, prefix])


def _humanize_1024(v: object) -> str:
    x = _to_float(v)
    if abs(x) <= 1 or math.isnan(x) or math.isinf(x):
        return sprintf("%.4g", [x])
    prefix = ""
    for p in ("ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"):
        if abs(x) < 1024:
            break
        prefix, x = p, x / 1024
    return sprintf("%.4g%s", [x, prefix])


def _humanize_duration(v: object) -> str:
    x = _to_float(v)
    if math.isnan(x) or math.isinf(x):
        return sprintf("%.4g", [x])
    if x == 0:
        return "0s"
    if abs(x) >= 1:
        sign = "-" if x < 0 else ""
        seconds = int(abs(x))
        days, rest = divmod(seconds, 86400)
        hours, rest = divmod(rest, 3600)
        minutes, secs = divmod(rest, 60)
        if days:
            return f"{sign}{days}d {hours}h {minutes}m {secs}s"
        if hours:
            return f"{sign}{hours}h {minutes}m {secs}s"
        if minutes:
            return f"{sign}{minutes}m {secs}s"
        return sprintf("%s%.4gs", [sign, abs(x)])
    prefix = ""
    for p in ("m", "u", "n", "p", "f", "a", "z", "y"):
        if abs(x) >= 1:
            break
        prefix, x = p, x * 1000
    return sprintf("%.4g%ss", [x, prefix])


def _index(container: object, key: object) -> object:
    if not isinstance(container, Mapping):
        raise TemplateError("index of a non-map value")
    return container.get(str(key), "")


FUNCTIONS: dict[str, Callable[..., object]] = {
    "printf": lambda fmt, *args: sprintf(str(fmt), list(args)),
    "print": lambda *args: sprint(list(args)),
    "humanize": _humanize,
    "humanize1024": _humanize_1024,
    "humanizePercentage": lambda v: sprintf("%.4g%%", [_to_float(v) * 100]),
    "humanizeDuration": _humanize_duration,
    "toUpper": lambda s: str(s).upper(),
    "toLower": lambda s: str(s).lower(),
    "title": lambda s: str(s).title(),
    "index": _index,
    "reReplaceAll": lambda pattern, repl, text: replace_all(str(pattern), str(text), str(repl)),
    "safeHtml": lambda s: s,
}


# ---------------------------------------------------------------- parsing


@dataclass(frozen=True)
class _Operand:
    kind: str  # str | num | var | field
    text: str


_Command = tuple[str | None, tuple[_Operand, ...]]  # (function name or None, operands)


def _tokens(action: str) -> list[tuple[str, str]]:
    out = []
    pos = 0
    while pos < len(action):
        match = _TOKEN.match(action, pos)
        if match is None or match.end() == pos:
            break
        pos = match.end()
        kind = match.lastgroup or "other"
        out.append((kind, match.group(kind)))
    return out


def _operand(kind: str, text: str) -> _Operand:
    if kind == "str":
        try:
            return _Operand("str", ast.literal_eval(text))
        except (ValueError, SyntaxError):
            raise TemplateError(f"invalid string {text}") from None
    if kind == "raw":
        return _Operand("str", text[1:-1])
    if kind == "var" and text.split(".")[0] not in _VARIABLES:
        raise TemplateError(f"undefined variable {text.split('.')[0]!r}")
    return _Operand(kind, text)


def _parse_action(action: str) -> tuple[_Command, ...]:
    tokens = _tokens(action)
    if not tokens:
        raise TemplateError("missing value for command")
    if tokens[0][0] == "ident" and tokens[0][1] in _KEYWORDS:
        raise TemplateError(f"unsupported template action {tokens[0][1]!r}")
    commands: list[_Command] = []
    current: list[tuple[str, str]] = []
    for token in [*tokens, ("pipe", "|")]:
        if token[0] != "pipe":
            current.append(token)
            continue
        if not current:
            raise TemplateError("missing command in pipeline")
        commands.append(_command(current, first=not commands))
        current = []
    return tuple(commands)


def _command(tokens: list[tuple[str, str]], first: bool) -> _Command:
    for kind, text in tokens:
        if kind == "other":
            raise TemplateError(f"unexpected {text!r} in command")
    head_kind, head = tokens[0]
    if head_kind == "ident":
        if head not in FUNCTIONS:
            raise TemplateError(f"function {head!r} not defined")
        for kind, text in tokens[1:]:
            if kind == "ident":
                raise TemplateError(f"function {text!r} as an argument is not supported")
        return head, tuple(_operand(k, t) for k, t in tokens[1:])
    if not first or len(tokens) != 1:
        raise TemplateError("can't give argument to non-function")
    return None, (_operand(head_kind, head),)


@dataclass(frozen=True)
class _Piece:
    text: str = ""
    pipeline: tuple[_Command, ...] | None = None


def _compile(text: str) -> tuple[_Piece, ...]:
    pieces: list[_Piece] = []
    pos = 0
    trim_next = False
    for match in _ACTION.finditer(text):
        literal = text[pos : match.start()]
        if trim_next:
            literal = literal.lstrip()
        if match.group(1):
            literal = literal.rstrip()
        pieces.append(_Piece(literal))
        body = match.group(2).strip()
        if not (body.startswith("/*") and body.endswith("*/")):
            pieces.append(_Piece(pipeline=_parse_action(body)))
        trim_next = bool(match.group(3))
        pos = match.end()
    rest = text[pos:]
    if "{{" in rest:
        raise TemplateError("unclosed action")
    pieces.append(_Piece(rest.lstrip() if trim_next else rest))
    return tuple(pieces)


def check_template(text: str) -> None:
    """Raise TemplateError when `text` would not expand (checked when a rule is stored)."""
    _compile(text)


# ---------------------------------------------------------------- execution


def _root(data: TemplateData) -> dict[str, object]:
    return {
        "Labels": dict(data.labels),
        "ExternalLabels": dict(data.external_labels),
        "ExternalURL": data.external_url,
        "Value": data.value,
    }


def _resolve(operand: _Operand, data: TemplateData) -> object:
    if operand.kind == "str":
        return operand.text
    if operand.kind == "num":
        text = operand.text
        return int(text) if re.fullmatch(r"[-+]?\d+", text) else float(text)
    root = _root(data)
    if operand.kind == "var":
        name, *path = operand.text.split(".")
        value: object = {
            "$": root,
            "$labels": root["Labels"],
            "$externalLabels": root["ExternalLabels"],
            "$externalURL": data.external_url,
            "$value": data.value,
        }[name]
    else:
        value, path = root, [p for p in operand.text.split(".") if p]
    for part in path:
        if not isinstance(value, Mapping):
            raise TemplateError(f"can't evaluate field {part}")
        value = value.get(part, "")
    return value


def expand(text: str, data: TemplateData) -> str:
    """Expand a template; raises TemplateError (the caller keeps the raw text then)."""
    if "{{" not in text:
        return text
    out: list[str] = []
    for piece in _compile(text):
        if piece.pipeline is None:
            out.append(piece.text)
            continue
        value: object = None
        for index, (func, operands) in enumerate(piece.pipeline):
            args = [_resolve(o, data) for o in operands]
            if func is None:
                value = args[0]
                continue
            if index:
                args.append(value)
            try:
                value = FUNCTIONS[func](*args)
            except TypeError as err:
                raise TemplateError(f"wrong arguments for {func}: {err}") from None
        out.append(sprint([value]))
    return "".join(out)
