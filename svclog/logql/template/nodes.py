"""Parse tree of a Go text/template: frozen, plain-data nodes (mirrors text/template/parse)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True)
class Dot:
    pass


@dataclass(frozen=True, slots=True)
class Nil:
    pass


@dataclass(frozen=True, slots=True)
class Bool:
    val: bool


@dataclass(frozen=True, slots=True)
class String:
    val: str


@dataclass(frozen=True, slots=True)
class Number:
    """A numeric constant; like Go it may be usable as int, float or both."""

    text: str
    int_val: int | None
    float_val: float | None
    ideal: int | float  # the value it has where any type is accepted


@dataclass(frozen=True, slots=True)
class Field:
    idents: tuple[str, ...]  # `.a.b` -> ("a", "b")


@dataclass(frozen=True, slots=True)
class Variable:
    idents: tuple[str, ...]  # `$x.a` -> ("$x", "a")


@dataclass(frozen=True, slots=True)
class Identifier:
    name: str  # a function name


@dataclass(frozen=True, slots=True)
class Chain:
    node: Node  # `(pipeline).a.b`
    fields: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Command:
    args: tuple[Node, ...]
    pos: int
    src: str


@dataclass(frozen=True, slots=True)
class Pipe:
    decl: tuple[str, ...]  # declared/assigned variable names
    is_assign: bool
    cmds: tuple[Command, ...]


@dataclass(frozen=True, slots=True)
class Action:
    pipe: Pipe


@dataclass(frozen=True, slots=True)
class Branch:
    kind: str  # "if" | "with" | "range"
    pipe: Pipe
    body: tuple[Node, ...]
    else_body: tuple[Node, ...] | None


@dataclass(frozen=True, slots=True)
class Break:
    pass


@dataclass(frozen=True, slots=True)
class Continue:
    pass


@dataclass(frozen=True, slots=True)
class TemplateCall:
    name: str
    pipe: Pipe | None


Node = (
    Text
    | Dot
    | Nil
    | Bool
    | String
    | Number
    | Field
    | Variable
    | Identifier
    | Chain
    | Command
    | Pipe
    | Action
    | Branch
    | Break
    | Continue
    | TemplateCall
)


def walk(nodes: tuple[Node, ...] | list[Node]) -> Iterator[Node]:
    """Yield every node of a tree, depth first."""
    stack: list[Node] = list(reversed(nodes))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, Action):
            stack.append(node.pipe)
        elif isinstance(node, Pipe):
            stack.extend(reversed(node.cmds))
        elif isinstance(node, Command):
            stack.extend(reversed(node.args))
        elif isinstance(node, Chain):
            stack.append(node.node)
        elif isinstance(node, Branch):
            stack.extend(reversed(node.else_body or ()))
            stack.extend(reversed(node.body))
            stack.append(node.pipe)
        elif isinstance(node, TemplateCall) and node.pipe is not None:
            stack.append(node.pipe)
