"""Executor: compiles a parse tree once into nested closures, then runs them per entry.

Statements compile to `run(st, dot) -> None` (appending to `st.out`), expressions to
`ev(st, dot) -> value`. Semantics follow text/template with `missingkey=zero`
over a map[string]string: a missing label is "", a missing JSON key is nil.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from svclog.logql.template import nodes as n
from svclog.logql.template.errors import TemplateExecError
from svclog.logql.template.functions import FUNCS
from svclog.logql.template.gotime import GoTime
from svclog.logql.template.limits import (
    MAX_OUTPUT,
    MAX_RANGE_ITERATIONS,
    TemplateLimitError,
    check_iterations,
    check_output,
)
from svclog.logql.template.parser import Parsed
from svclog.logql.template.values import GoInt64, format_v, truth, type_name

_MAX_DEPTH = 64
_GO_KIND = {"str": "string", "int": "int", "float": "float64", "time": "time.Time"}


class State:
    __slots__ = ("depth", "labels", "line", "out", "size", "steps", "ts_ns", "vars")

    def __init__(self, labels: Mapping[str, str], line: str, ts_ns: int) -> None:
        self.labels = labels
        self.line = line
        self.ts_ns = ts_ns
        self.vars: list[list[Any]] = [["$", labels]]  # [name, value] slots, innermost last
        self.out: list[str] = []
        self.size = 0  # characters in out (bounded by limits.MAX_OUTPUT)
        self.steps = 0  # range iterations so far (bounded by limits.MAX_RANGE_ITERATIONS)
        self.depth = 0

    def emit(self, text: str) -> None:
        self.size += len(text)
        if self.size > MAX_OUTPUT:
            check_output("the rendered text", self.size)
        self.out.append(text)


Run = Callable[[State, object], None]
Ev = Callable[[State, object], object]
# a command: (state, dot, the piped-in final argument) -> value
Cmd = Callable[[State, object, object], object]


class _Fail(Exception):
    """An execution error not yet placed at a command."""


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


def print_value(v: object) -> str:
    if type(v) is str:
        return v
    return "<no value>" if v is None else format_v(v)


def _check(v: object, kind: str) -> object:
    """Go's validateType for a computed value passed to a typed parameter."""
    if kind == "any":
        return v
    t = type(v)
    if (
        (kind == "str" and t is str)
        or (kind == "int" and t is int)
        or (kind == "float" and t is float)
        or (kind == "time" and t is GoTime)
    ):
        return v
    if v is None:
        raise _Fail(f"invalid value; expected {_GO_KIND[kind]}")
    raise _Fail(f"wrong type for value; expected {_GO_KIND[kind]}; got {type_name(v)}")


def _get_field(st: State, recv: object, name: str, has_args: bool) -> object:
    if recv is st.labels:
        if has_args:
            raise _Fail(f"{name} is not a method but has arguments")
        return recv.get(name, "")
    if isinstance(recv, Mapping):
        if has_args:
            raise _Fail(f"{name} is not a method but has arguments")
        return recv.get(name)
    if recv is None:
        raise _Fail(f"nil pointer evaluating interface {{}}.{name}")
    raise _Fail(f"can't evaluate field {name} in type {type_name(recv)}")


def _lookup_var(st: State, name: str) -> list[Any]:
    for i in range(len(st.vars) - 1, -1, -1):
        if st.vars[i][0] == name:
            return st.vars[i]
    raise _Fail(f"undefined variable: {name}")


class Compiler:
    def __init__(self, parsed: Parsed, text: str, name: str) -> None:
        self.text = text
        self.name = name
        self.defs_src = parsed.defs
        self.defs: dict[str, Run] = {}
        self.root = self.block(parsed.root)

    # -- errors --------------------------------------------------------
    def where(self, cmd: n.Command) -> str:
        before = self.text[: cmd.pos]
        line = before.count("\n") + 1
        col = cmd.pos - (before.rfind("\n") + 1)
        return f'template: {self.name}:{line}:{col}: executing "{self.name}" at <{cmd.src}>: '

    # -- statements ----------------------------------------------------
    def block(self, nodes: tuple[n.Node, ...]) -> Run:
        runs = [self.stmt(node) for node in nodes]
        if len(runs) == 1:
            return runs[0]

        def run(st: State, dot: object) -> None:
            for r in runs:
                r(st, dot)

        return run

    def stmt(self, node: n.Node) -> Run:
        if isinstance(node, n.Text):
            text = node.text
            return lambda st, dot: st.emit(text)
        if isinstance(node, n.Action):
            pipe = self.pipe(node.pipe)
            if node.pipe.decl:

                def declare(st: State, dot: object) -> None:
                    pipe(st, dot)

                return declare
            return lambda st, dot: st.emit(print_value(pipe(st, dot)))
        if isinstance(node, n.Branch):
            return self.range_(node) if node.kind == "range" else self.if_with(node)
        if isinstance(node, n.Break):

            def brk(st: State, dot: object) -> None:
                raise _Break

            return brk
        if isinstance(node, n.Continue):

            def cont(st: State, dot: object) -> None:
                raise _Continue

            return cont
        if isinstance(node, n.TemplateCall):
            return self.template_call(node)
        raise AssertionError(f"unexpected node {node!r}")

    def if_with(self, node: n.Branch) -> Run:
        pipe = self.pipe(node.pipe)
        body = self.block(node.body)
        other = self.block(node.else_body) if node.else_body is not None else None
        is_with = node.kind == "with"

        def run(st: State, dot: object) -> None:
            mark = len(st.vars)
            try:
                val = pipe(st, dot)
                if truth(val):
                    body(st, val if is_with else dot)
                elif other is not None:
                    other(st, dot)
            finally:
                del st.vars[mark:]

        return run

    def range_(self, node: n.Branch) -> Run:
        pipe = self.pipe(node.pipe)
        body = self.block(node.body)
        other = self.block(node.else_body) if node.else_body is not None else None
        ndecl, where = len(node.pipe.decl), self.where(node.pipe.cmds[0])
        decl, is_assign = node.pipe.decl, node.pipe.is_assign

        def run(st: State, dot: object) -> None:
            mark = len(st.vars)
            try:
                val = pipe(st, dot)
                try:
                    items = _range_items(val, ndecl)
                except _Fail as exc:
                    raise TemplateExecError(where + str(exc)) from None
                if not items:
                    if other is not None:
                        other(st, dot)
                    return
                top = len(st.vars)
                for key, elem in items:
                    st.steps += 1
                    if st.steps > MAX_RANGE_ITERATIONS:
                        check_iterations(st.steps)
                    if is_assign:
                        _assign_loop_vars(st, decl, key, elem)
                    elif ndecl:
                        st.vars[top - 1][1] = elem
                        if ndecl == 2:
                            st.vars[top - 2][1] = key
                    try:
                        body(st, elem)
                    except _Continue:
                        pass
                    except _Break:
                        break
                    finally:
                        del st.vars[top:]
            finally:
                del st.vars[mark:]

        return run

    def template_call(self, node: n.TemplateCall) -> Run:
        pipe = self.pipe(node.pipe) if node.pipe is not None else None
        name = node.name

        def run(st: State, dot: object) -> None:
            body = self.defined(name)
            if st.depth >= _MAX_DEPTH:
                raise TemplateExecError(f"template: {name}: exceeded maximum template depth ({_MAX_DEPTH})")
            new_dot = pipe(st, dot) if pipe is not None else None
            saved = st.vars
            st.vars, st.depth = [["$", new_dot]], st.depth + 1
            try:
                body(st, new_dot)
            finally:
                st.vars, st.depth = saved, st.depth - 1

        return run

    def defined(self, name: str) -> Run:
        if name not in self.defs:
            if name not in self.defs_src:
                raise TemplateExecError(f'template: {self.name}: no such template "{name}"')
            self.defs[name] = lambda st, dot: None  # placeholder while compiling recursion
            compiled = self.block(self.defs_src[name])
            self.defs[name] = compiled
        return self.defs[name]

    # -- pipelines and commands ----------------------------------------
    def pipe(self, pipe: n.Pipe) -> Ev:
        cmds = [self.command(cmd, i > 0) for i, cmd in enumerate(pipe.cmds)]
        decl, is_assign = pipe.decl, pipe.is_assign
        first, rest = cmds[0], cmds[1:]

        def ev(st: State, dot: object) -> object:
            val = first(st, dot, None)
            for c in rest:
                val = c(st, dot, val)
            for name in decl:
                if is_assign:
                    try:
                        _lookup_var(st, name)[1] = val
                    except _Fail as exc:
                        raise TemplateExecError(str(exc)) from None
                else:
                    st.vars.append([name, val])
            return val

        return ev

    def command(self, cmd: n.Command, has_final: bool) -> Cmd:
        head, args, where = cmd.args[0], cmd.args[1:], self.where(cmd)
        if isinstance(head, n.Identifier):
            return self.call(head.name, args, has_final, where)
        if isinstance(head, (n.Field, n.Variable, n.Chain)):
            receiver, fields = self.receiver(head)
            arg_count = len(args) + has_final

            def access(st: State, dot: object, final: object) -> object:
                try:
                    v = receiver(st, dot)
                    for i, name in enumerate(fields):
                        v = _get_field(st, v, name, arg_count > 0 and i == len(fields) - 1)
                    return v
                except _Fail as exc:
                    raise TemplateExecError(where + str(exc)) from None

            if not fields and (args or has_final):
                msg = f"can't give argument to non-function {cmd.src.split()[0]}"
                return _raiser(where + msg)
            return access
        if args or has_final:
            return _raiser(where + f"can't give argument to non-function {cmd.src.split()[0]}")
        if isinstance(head, n.Nil):
            return _raiser(where + "nil is not a command")
        ev = self.operand(head)
        return lambda st, dot, final: ev(st, dot)

    def receiver(self, node: n.Field | n.Variable | n.Chain) -> tuple[Ev, tuple[str, ...]]:
        if isinstance(node, n.Field):
            return (lambda st, dot: dot), node.idents
        if isinstance(node, n.Variable):
            name = node.idents[0]
            return (lambda st, dot: _lookup_var(st, name)[1]), node.idents[1:]
        return self.operand(node.node), node.fields

    def call(self, name: str, args: tuple[n.Node, ...], has_final: bool, where: str) -> Cmd:
        spec = FUNCS[name]
        nargs = len(args) + has_final
        fixed = len(spec.params)
        if (spec.variadic is None and nargs != fixed) or nargs < fixed:
            want = f"at least {fixed}" if spec.variadic else str(fixed)
            return _raiser(where + f"wrong number of args for {name}: want {want} got {nargs}")
        kinds = list(spec.params) + ([spec.variadic] * (nargs - fixed) if spec.variadic else [])
        arg_evs = [self.arg(node, kinds[i]) for i, node in enumerate(args)]
        if name in ("and", "or"):
            return self.short_circuit(name == "or", arg_evs, has_final, where)
        final_kind = kinds[-1] if has_final else None
        fn, context = spec.fn, spec.context

        def invoke(st: State, dot: object, final: object) -> object:
            try:
                values = [ev(st, dot) for ev in arg_evs]
                if final_kind is not None:
                    values.append(_check(final, final_kind))
                if context is not None:
                    values.insert(0, st.line if context == "line" else st.ts_ns if context == "ts" else st.labels)
                result = fn(*values)
                if type(result) is str and len(result) > MAX_OUTPUT:  # amplifiers check before building
                    check_output(name, len(result))
                return result
            except (TemplateExecError, TemplateLimitError):
                raise
            except _Fail as exc:
                raise TemplateExecError(where + str(exc)) from None
            except Exception as exc:  # noqa: BLE001 - Go recovers any panic of a called function
                raise TemplateExecError(where + f"error calling {name}: {exc}") from None

        return invoke

    def short_circuit(self, is_or: bool, arg_evs: list[Ev], has_final: bool, where: str) -> Cmd:
        def invoke(st: State, dot: object, final: object) -> object:
            v: object = None
            for ev in arg_evs:
                try:
                    v = ev(st, dot)
                except _Fail as exc:
                    raise TemplateExecError(where + str(exc)) from None
                if truth(v) == is_or:
                    return v
            # No operand decided it: the piped value (not yet tested) is the result.
            return final if has_final else v

        return invoke

    # -- arguments -----------------------------------------------------
    def arg(self, node: n.Node, kind: str) -> Ev:
        """An argument converted for a parameter of the given Go kind."""
        const = _constant(node, kind)
        if const is not _NOT_CONST:
            if isinstance(const, _Fail):
                msg = str(const)

                def fail(st: State, dot: object) -> object:
                    raise _Fail(msg)

                return fail
            return lambda st, dot: const
        ev = self.operand(node)
        if kind == "any":
            return ev
        return lambda st, dot: _check(ev(st, dot), kind)

    def operand(self, node: n.Node) -> Ev:
        """An expression in argument position, unconverted."""
        if isinstance(node, n.Dot):
            return lambda st, dot: dot
        if isinstance(node, n.Field) and len(node.idents) == 1:
            name = node.idents[0]

            def field(st: State, dot: object) -> object:
                if dot is st.labels:
                    return st.labels.get(name, "")
                return _get_field(st, dot, name, False)

            return field
        if isinstance(node, (n.Field, n.Variable, n.Chain)):
            receiver, fields = self.receiver(node)

            def chain(st: State, dot: object) -> object:
                v = receiver(st, dot)
                for name in fields:
                    v = _get_field(st, v, name, False)
                return v

            return chain
        if isinstance(node, n.Identifier):
            call = self.call(node.name, (), False, "")
            return lambda st, dot: _rewrap(call, st, dot)
        if isinstance(node, n.Pipe):
            inner = self.pipe(node)

            def paren(st: State, dot: object) -> object:
                mark = len(st.vars)
                try:
                    return inner(st, dot)
                finally:
                    del st.vars[mark:]

            return paren
        const = _constant(node, "any")
        return lambda st, dot: const


_NOT_CONST = object()


def _assign_loop_vars(st: State, decl: tuple[str, ...], key: object, elem: object) -> None:
    try:
        _lookup_var(st, decl[-1])[1] = elem
        if len(decl) == 2:
            _lookup_var(st, decl[0])[1] = key
    except _Fail as exc:
        raise TemplateExecError(str(exc)) from None


def _raiser(msg: str) -> Cmd:
    def fail(st: State, dot: object, final: object = None) -> object:
        raise TemplateExecError(msg)

    return fail


def _rewrap(call: Cmd, st: State, dot: object) -> object:
    return call(st, dot, None)


def _constant(node: n.Node, kind: str) -> object:
    """A literal's value for a parameter kind, a _Fail to raise, or _NOT_CONST."""
    if isinstance(node, n.String):
        return node.val if kind in ("str", "any") else _Fail(f"expected {_GO_KIND[kind]}; found {node.val!r}")
    if isinstance(node, n.Number):
        if kind == "any":
            return node.ideal
        if kind == "int" and node.int_val is not None:
            return node.int_val
        if kind == "float" and node.float_val is not None:
            return node.float_val
        expected = "integer" if kind == "int" else _GO_KIND[kind]
        return _Fail(f"expected {expected}; found {node.text}")
    if isinstance(node, n.Bool):
        return node.val if kind == "any" else _Fail(f"expected {_GO_KIND[kind]}; found {str(node.val).lower()}")
    if isinstance(node, n.Nil):
        return None if kind == "any" else _Fail(f"cannot assign nil to {_GO_KIND[kind]}")
    return _NOT_CONST


class _IntRange:
    """`range N`'s (index, value) pairs, made as iterated: a huge N costs nothing until run."""

    __slots__ = ("n",)

    def __init__(self, n: int) -> None:
        self.n = max(n, 0)

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return ((i, i) for i in range(self.n))


def _range_items(val: object, ndecl: int) -> list[tuple[object, object]] | _IntRange:
    if val is None:
        return []
    if isinstance(val, list):
        return list(enumerate(val))
    if isinstance(val, Mapping):
        return [(k, val[k]) for k in sorted(val)]
    if type(val) in (int, GoInt64):
        if ndecl > 1:
            raise _Fail(f"can't use {val} to iterate over more than one variable")
        return _IntRange(int(val))  # type: ignore[call-overload]
    raise _Fail(f"range can't iterate over {format_v(val)}")
