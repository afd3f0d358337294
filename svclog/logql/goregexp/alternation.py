"""Alternations as Go's regexp/syntax builds them: factored and merged as they are parsed.

`collapse` flattens nested concatenations or alternations; for an alternation `factor` then
takes out common literal prefixes (`abc|abd` -> `ab(?:c|d)`), common leading classes, merges
runs of single characters into one class (`a|b` -> `[a-b]`) and runs of empty matches into one.
Each step follows Go's code, including what it compares: a leading literal is compared by its
runes only, so `A[^\\n]b|[Aa]` loses the second leg's case folding, as Go's does.
"""

from __future__ import annotations

from svclog.logql.goregexp.classes import (
    MAX_RUNE,
    append_class,
    append_folded_range,
    append_range,
    clean_class,
    in_class,
)
from svclog.logql.goregexp.syntax import FOLD_CASE, Node, Op


def is_char_class(re: Node) -> bool:
    return (re.op == Op.LITERAL and len(re.runes) == 1) or re.op in (Op.CHAR_CLASS, Op.ANY_CHAR_NOT_NL, Op.ANY_CHAR)


def _match_newline(re: Node) -> bool:
    if re.op == Op.LITERAL:
        return re.runes == [0xA]
    if re.op == Op.CHAR_CLASS:
        return in_class(0xA, re.runes) or re.opaque_nl
    return re.op == Op.ANY_CHAR


def merge_char_class(dst: Node, src: Node) -> None:
    """dst |= src, where dst.op >= src.op (Go's mergeCharClass)."""
    if dst.op == Op.ANY_CHAR_NOT_NL:
        if _match_newline(src):
            dst.op = Op.ANY_CHAR
    elif dst.op == Op.CHAR_CLASS:
        if src.op == Op.LITERAL:
            _append_literal(dst.runes, src.runes[0], src.flags)
        else:
            append_class(dst.runes, src.runes)
            dst.opaque, dst.opaque_nl = dst.opaque | src.opaque, dst.opaque_nl or src.opaque_nl
    elif dst.op == Op.LITERAL:
        if src.runes[0] == dst.runes[0] and src.flags == dst.flags:
            return
        dst.op = Op.CHAR_CLASS
        first = dst.runes[0]
        dst.runes = []
        _append_literal(dst.runes, first, dst.flags)
        _append_literal(dst.runes, src.runes[0], src.flags)


def _append_literal(r: list[int], x: int, flags: int) -> list[int]:
    return append_folded_range(r, x, x) if flags & FOLD_CASE else append_range(r, x, x)


def clean_alt(re: Node) -> None:
    if re.op != Op.CHAR_CLASS:
        return
    clean_class(re.runes)
    if re.opaque:
        return
    if re.runes == [0, MAX_RUNE]:
        re.runes, re.op = [], Op.ANY_CHAR
    elif re.runes == [0, 0x9, 0xB, MAX_RUNE]:
        re.runes, re.op = [], Op.ANY_CHAR_NOT_NL


def collapse(subs: list[Node], op: Op) -> Node:
    """subs under op (Go's collapse): nested ops of the same kind flattened, alternations factored."""
    if len(subs) == 1:
        return subs[0]
    re = Node(op)
    for sub in subs:
        re.subs.extend(sub.subs if sub.op == op else [sub])
    if op == Op.ALTERNATE:
        re.subs = factor(re.subs)
        if len(re.subs) == 1:
            return re.subs[0]
    return re


def factor(sub: list[Node]) -> list[Node]:
    if len(sub) < 2:
        return sub
    sub = _factor_strings(sub)
    sub = _factor_first_pieces(sub)
    sub = _merge_classes(sub)
    # round 4: runs of empty matches become one
    return [re for i, re in enumerate(sub) if not (i + 1 < len(sub) and re.op == sub[i + 1].op == Op.EMPTY_MATCH)]


def _factor_strings(sub: list[Node]) -> list[Node]:
    """Round 1: common literal prefixes, `abc|abd` -> `ab(?:c|d)`."""
    out: list[Node] = []
    prefix: list[int] = []
    prefix_flags = start = 0
    for i in range(len(sub) + 1):
        if i < len(sub):
            runes, flags = _leading_string(sub[i])
            if flags == prefix_flags:
                same = 0
                while same < len(prefix) and same < len(runes) and prefix[same] == runes[same]:
                    same += 1
                if same > 0:
                    prefix = prefix[:same]
                    continue
        if i == start + 1:
            out.append(sub[start])
        elif i > start + 1:
            head = Node(Op.LITERAL, prefix_flags, list(prefix))
            rests = [_remove_leading_string(sub[j], len(prefix)) for j in range(start, i)]
            out.append(Node(Op.CONCAT, subs=[head, collapse(rests, Op.ALTERNATE)]))
        start = i
        if i < len(sub):
            prefix, prefix_flags = _leading_string(sub[i])
    return out


def _factor_first_pieces(sub: list[Node]) -> list[Node]:
    """Round 2: a common first piece that is a class (or a fixed repeat of one)."""
    out: list[Node] = []
    start = 0
    first: Node | None = None
    for i in range(len(sub) + 1):
        ifirst = None
        if i < len(sub):
            ifirst = _leading_regexp(sub[i])
            if (
                first is not None
                and first.equal(ifirst)
                and (
                    is_char_class(first)
                    or (first.op == Op.REPEAT and first.min == first.max and is_char_class(first.subs[0]))
                )
            ):
                continue
        if i == start + 1:
            out.append(sub[start])
        elif i > start + 1:
            assert first is not None
            rests = [_remove_leading_regexp(sub[j]) for j in range(start, i)]
            out.append(Node(Op.CONCAT, subs=[first, collapse(rests, Op.ALTERNATE)]))
        start, first = i, ifirst
    return out


def _merge_classes(sub: list[Node]) -> list[Node]:
    """Round 3: runs of single characters and classes become one class, `a|b` -> `[a-b]`."""
    out: list[Node] = []
    start = 0
    for i in range(len(sub) + 1):
        if i < len(sub) and is_char_class(sub[i]):
            continue
        if i == start + 1:
            out.append(sub[start])
        elif i > start + 1:
            most = start  # merge into the most complex one
            for j in range(start + 1, i):
                if sub[most].op < sub[j].op or (sub[most].op == sub[j].op and len(sub[most].runes) < len(sub[j].runes)):
                    most = j
            sub[start], sub[most] = sub[most], sub[start]
            for j in range(start + 1, i):
                merge_char_class(sub[start], sub[j])
            clean_alt(sub[start])
            out.append(sub[start])
        if i < len(sub):
            out.append(sub[i])
        start = i + 1
    return out


def _leading_string(re: Node) -> tuple[list[int], int]:
    if re.op == Op.CONCAT and re.subs:
        re = re.subs[0]
    if re.op != Op.LITERAL:
        return [], 0
    return re.runes, re.flags & FOLD_CASE


def _remove_leading_string(re: Node, n: int) -> Node:
    if re.op == Op.CONCAT and re.subs:
        sub = _remove_leading_string(re.subs[0], n)
        re.subs[0] = sub
        if sub.op == Op.EMPTY_MATCH:
            if len(re.subs) <= 1:
                re.op, re.subs = Op.EMPTY_MATCH, []
            elif len(re.subs) == 2:
                return re.subs[1]
            else:
                del re.subs[0]
        return re
    if re.op == Op.LITERAL:
        re.runes = re.runes[n:]
        if not re.runes:
            re.op = Op.EMPTY_MATCH  # keeps its flags (a case-folded literal's empty rest is folded)
    return re


def _leading_regexp(re: Node) -> Node | None:
    if re.op == Op.EMPTY_MATCH:
        return None
    if re.op == Op.CONCAT and re.subs:
        return None if re.subs[0].op == Op.EMPTY_MATCH else re.subs[0]
    return re


def _remove_leading_regexp(re: Node) -> Node:
    if re.op == Op.CONCAT and re.subs:
        del re.subs[0]
        if not re.subs:
            re.op = Op.EMPTY_MATCH
        elif len(re.subs) == 1:
            return re.subs[0]
        return re
    return Node(Op.EMPTY_MATCH)
