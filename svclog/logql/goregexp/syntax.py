"""The tree of Go's regexp/syntax: its nodes, `Simplify()`, and an RE2 spelling of a tree.

The reference decides how to run a regex line or label filter from the shape of the tree Go's
parser builds (parser.py), then simplified here as Go's `Regexp.Simplify` does (counted
repetitions spelled out). When no literal filter fits, the reference compiles the tree, not the
pattern's text, so `to_re2` writes the tree back out for RE2: Go's rewrites are not always
meaning-preserving (see alternation.py), and the tree is what the reference matches.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class GoRegexError(ValueError):
    """Go's parse error, in its wording (`error parsing regexp: <code>: `<expr>``)."""

    def __init__(self, code: str, expr: str):
        super().__init__(f"error parsing regexp: {code}: `{expr}`")


class Op(enum.IntEnum):
    # Go's numbering: mergeCharClass and the alternation merge compare operators by it
    NO_MATCH = 1
    EMPTY_MATCH = 2
    LITERAL = 3
    CHAR_CLASS = 4
    ANY_CHAR_NOT_NL = 5
    ANY_CHAR = 6
    BEGIN_LINE = 7
    END_LINE = 8
    BEGIN_TEXT = 9
    END_TEXT = 10
    WORD_BOUNDARY = 11
    NO_WORD_BOUNDARY = 12
    CAPTURE = 13
    STAR = 14
    PLUS = 15
    QUEST = 16
    REPEAT = 17
    CONCAT = 18
    ALTERNATE = 19
    LEFT_PAREN = 128  # parse-stack markers
    VERTICAL_BAR = 129


# Go's parse flags, bit for bit (bit 1, Literal, is not used here)
FOLD_CASE, CLASS_NL, DOT_NL, ONE_LINE, NON_GREEDY, PERL_X, UNICODE_GROUPS, WAS_DOLLAR = (
    1 << i for i in (0, 2, 3, 4, 5, 6, 7, 8)
)
PERL = CLASS_NL | ONE_LINE | PERL_X | UNICODE_GROUPS


@dataclass(eq=False)
class Node:
    """One node of Go's tree (its Regexp struct); mutable, as Go's parser edits nodes in place."""

    op: Op
    flags: int = 0
    runes: list[int] = field(default_factory=list)
    subs: list[Node] = field(default_factory=list)
    min: int = 0
    max: int = 0
    cap: int = 0
    name: str = ""
    # a class with Unicode tables in it: their tags, and whether they hold "\n"
    opaque: frozenset[str] = frozenset()
    opaque_nl: bool = False

    def assign(self, other: Node) -> None:
        """Go's `*re = *other` (the rune and sub lists are shared, as Go's slices are)."""
        self.__dict__.update(other.__dict__)

    def equal(self, other: Node | None) -> bool:
        if other is None or self.op != other.op:
            return False
        if self.op == Op.END_TEXT:
            return self.flags & WAS_DOLLAR == other.flags & WAS_DOLLAR
        if self.op in (Op.LITERAL, Op.CHAR_CLASS):
            return self.runes == other.runes and self.opaque == other.opaque
        if self.op in (Op.ALTERNATE, Op.CONCAT):
            return len(self.subs) == len(other.subs) and all(a.equal(b) for a, b in zip(self.subs, other.subs))
        if self.op in (Op.STAR, Op.PLUS, Op.QUEST, Op.REPEAT):
            return (
                self.flags & NON_GREEDY == other.flags & NON_GREEDY
                and (self.op != Op.REPEAT or (self.min, self.max) == (other.min, other.max))
                and self.subs[0].equal(other.subs[0])
            )
        if self.op == Op.CAPTURE:
            return (self.cap, self.name) == (other.cap, other.name) and self.subs[0].equal(other.subs[0])
        return True


# ---------------------------------------------------------------- Simplify


def simplify(re: Node) -> Node:
    """Go's Regexp.Simplify: counted repetitions spelled out with *, + and ?."""
    if re.op in (Op.CAPTURE, Op.CONCAT, Op.ALTERNATE):
        subs = [simplify(sub) for sub in re.subs]
        if all(a is b for a, b in zip(subs, re.subs)):
            return re
        copy = Node(**{**re.__dict__, "runes": [], "subs": subs})
        return copy
    if re.op in (Op.STAR, Op.PLUS, Op.QUEST):
        return _simplify1(re.op, re.flags, simplify(re.subs[0]), re)
    if re.op == Op.REPEAT:
        if re.min == 0 and re.max == 0:
            return Node(Op.EMPTY_MATCH)
        sub = simplify(re.subs[0])
        if re.max == -1:
            if re.min == 0:
                return _simplify1(Op.STAR, re.flags, sub, None)
            if re.min == 1:
                return _simplify1(Op.PLUS, re.flags, sub, None)
            return Node(Op.CONCAT, subs=[sub] * (re.min - 1) + [_simplify1(Op.PLUS, re.flags, sub, None)])
        if re.min == 1 and re.max == 1:
            return sub
        prefix = Node(Op.CONCAT, subs=[sub] * re.min) if re.min > 0 else None
        if re.max > re.min:
            suffix = _simplify1(Op.QUEST, re.flags, sub, None)
            for _ in range(re.min + 1, re.max):
                suffix = _simplify1(Op.QUEST, re.flags, Node(Op.CONCAT, subs=[sub, suffix]), None)
            if prefix is None:
                return suffix
            prefix.subs.append(suffix)
        return prefix if prefix is not None else Node(Op.NO_MATCH)
    return re


def _simplify1(op: Op, flags: int, sub: Node, re: Node | None) -> Node:
    if sub.op == Op.EMPTY_MATCH:
        return sub
    if op == sub.op and flags & NON_GREEDY == sub.flags & NON_GREEDY:
        return sub
    if re is not None and re.op == op and re.flags & NON_GREEDY == flags & NON_GREEDY and sub is re.subs[0]:
        return re
    return Node(op, flags, subs=[sub])


def to_re2(re: Node) -> str | None:
    """An RE2 pattern matching what Go's regexp matches for this tree (the reference compiles
    the tree, not the text it was parsed from); None when it holds an opaque Unicode class."""
    try:
        return _render(re)
    except LookupError:
        return None


_NEVER = r"[^\x00-\x{10FFFF}]"
_PLAIN = {
    Op.NO_MATCH: _NEVER,
    Op.EMPTY_MATCH: "(?:)",
    Op.ANY_CHAR_NOT_NL: "(?-s:.)",
    Op.ANY_CHAR: "(?s:.)",
    Op.BEGIN_LINE: "(?m:^)",
    Op.END_LINE: "(?m:$)",
    Op.BEGIN_TEXT: r"\A",
    Op.END_TEXT: r"\z",
    Op.WORD_BOUNDARY: r"\b",
    Op.NO_WORD_BOUNDARY: r"\B",
}


def _render(re: Node) -> str:
    if re.op in _PLAIN:
        return _PLAIN[re.op]
    if re.op == Op.LITERAL:
        text = "".join(f"\\x{{{r:x}}}" for r in re.runes)
        return f"(?i:{text})" if re.flags & FOLD_CASE else f"(?:{text})"
    if re.op == Op.CHAR_CLASS:
        ranges = "".join(f"\\x{{{lo:x}}}-\\x{{{hi:x}}}" for lo, hi in zip(re.runes[::2], re.runes[1::2]))
        if not re.opaque:
            # the empty match keeps RE2 from merging the class into a neighbouring alternative
            # and reading [Kk] as a case-folded k (which Go's class is not: no Kelvin sign)
            return f"(?:(?:)[{ranges}])" if ranges else _NEVER
        return "(?:" + "|".join(([f"[{ranges}]"] if ranges else []) + [_table(tag) for tag in sorted(re.opaque)]) + ")"
    subs = [_render(sub) for sub in re.subs]
    if re.op == Op.CONCAT:
        return "(?:" + "".join(subs) + ")"
    if re.op == Op.ALTERNATE:
        return "(?:" + "|".join(subs) + ")"
    if re.op == Op.CAPTURE:
        return f"(?:{subs[0]})"
    lazy = "?" if re.flags & NON_GREEDY else ""
    if re.op == Op.REPEAT:
        return f"(?:{subs[0]}){{{re.min},{'' if re.max < 0 else re.max}}}{lazy}"
    return f"(?:{subs[0]}){_SUFFIX[re.op]}{lazy}"


_SUFFIX = {Op.STAR: "*", Op.PLUS: "+", Op.QUEST: "?"}


def _table(tag: str) -> str:
    """A Unicode table of a class, `[^]Name[/i]`; a negated class holding one is not rendered."""
    if tag.startswith("^("):
        raise LookupError(tag)
    name, _, fold = tag.removeprefix("^").partition("/")
    table = f"\\{'P' if tag.startswith('^') else 'p'}{{{name}}}"
    return f"(?i:{table})" if fold else table
