"""The function table of LogQL templates: Go builtins + Loki's list of Sprig and own functions.

Each entry declares Go parameter kinds so arguments are type-checked as Go's
reflection-based calls do ("str", "int", "float", "time" or "any").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from svclog.logql.template.funcs_builtin import BUILTIN_FUNCS, BuiltinError, index
from svclog.logql.template.funcs_math import MATH_FUNCS
from svclog.logql.template.funcs_text import TEXT_FUNCS
from svclog.logql.template.funcs_time import TIME_FUNCS
from svclog.logql.template.gotime import LOCAL, GoTime


@dataclass(frozen=True, slots=True)
class Func:
    fn: Callable[..., object]
    params: tuple[str, ...]
    variadic: str | None = None
    # Per-entry context passed as the first argument: "line", "ts" or "labels".
    context: str | None = None


def _call(*_: object) -> object:
    raise BuiltinError("call of non-function")


def _short_circuit(*_: object) -> object:  # and/or are evaluated lazily by the executor
    raise AssertionError("and/or are special forms")


FUNCS: dict[str, Func] = {
    "and": Func(_short_circuit, ("any",), "any"),
    "or": Func(_short_circuit, ("any",), "any"),
    "call": Func(_call, ("any",), "any"),
    "index": Func(index, ("any",), "any", context="labels"),
    "__line__": Func(lambda line: line, (), context="line"),
    "__timestamp__": Func(lambda ts: GoTime(ts, LOCAL), (), context="ts"),
}
for _name, (_fn, _params, _var) in {**BUILTIN_FUNCS, **MATH_FUNCS}.items():
    FUNCS[_name] = Func(_fn, _params, _var)  # type: ignore[arg-type]
for _name, (_fn, _params) in {**TEXT_FUNCS, **TIME_FUNCS}.items():
    FUNCS[_name] = Func(_fn, _params)  # type: ignore[arg-type]
FUNCS["default"] = Func(lambda d, *given: d if not given or _empty(given[0]) else given[0], ("any",), "any")


def _empty(v: object) -> bool:
    """Sprig's empty: nil, zero numbers, false and zero-length values are empty."""
    return v is None or (not isinstance(v, GoTime) and not v)
