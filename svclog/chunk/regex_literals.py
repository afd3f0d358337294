"""Literal substrings that every match of an RE2 pattern contains (for skipping blocks).

Deliberately conservative: the pattern is read as a top-level sequence of atoms, and only runs
of plain characters that must appear one after another are kept. Groups, classes, `.`, anchors
and escapes that stand for a set (`\\d`, `\\pL`, ...) end a run; a quantifier that allows zero
repetitions (`?`, `*`, `{0,..}`) drops the character before it; a top-level `|`, a
case-insensitive flag, `\\Q` or anything this reader does not follow yields no literal at all.
Fewer literals only means fewer blocks skipped, never a wrong answer.
"""

from __future__ import annotations

import re

_REPEAT = re.compile(r"\{(\d+)(,\d*)?\}")
_CASE_FLAG = re.compile(r"\(\?[a-zA-Z-]*i")
_SET_ESCAPES = set("dDwWsSbBAzZ")  # one position or character class, no literal
_CONTROL_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}


class _Unsupported(Exception):
    pass


def required_literals(pattern: str) -> list[str]:
    """Strings that occur in every line `pattern` matches (empty when none can be told)."""
    if _CASE_FLAG.search(pattern) or "\\Q" in pattern:
        return []
    try:
        return [run for run in _runs(pattern) if run]
    except _Unsupported:
        return []


def _runs(pattern: str) -> list[str]:
    runs: list[str] = []
    current: list[str] = []
    last_is_char = False  # does the atom just read end `current` (so a quantifier applies to it)?
    i, n = 0, len(pattern)

    def flush() -> None:
        runs.append("".join(current))
        current.clear()

    while i < n:
        ch = pattern[i]
        if ch in "*?+{":
            repeat = _REPEAT.match(pattern, i) if ch == "{" else None
            if ch != "{" or repeat:
                optional = ch in "*?" or (repeat is not None and int(repeat.group(1)) == 0)
                if last_is_char and optional:
                    current.pop()
                flush()  # a repeated character may be followed by itself, so the run ends here
                i = repeat.end() if repeat else i + 1
                if i < n and pattern[i] == "?":  # lazy form
                    i += 1
                last_is_char = False
                continue
        if ch == "|":
            raise _Unsupported  # alternatives at the top level: nothing is required
        if ch == ")":
            raise _Unsupported
        if ch == "(":
            i = _skip_group(pattern, i)
            flush()
            last_is_char = False
            continue
        if ch == "[":
            i = _skip_class(pattern, i)
            flush()
            last_is_char = False
            continue
        if ch in ".^$":
            flush()
            i += 1
            last_is_char = False
            continue
        if ch == "\\":
            literal, i = _escape(pattern, i)
            if literal is None:
                flush()
                last_is_char = False
            else:
                current.append(literal)
                last_is_char = True
            continue
        current.append(ch)
        last_is_char = True
        i += 1
    flush()
    return runs


def _escape(pattern: str, i: int) -> tuple[str | None, int]:
    """(the literal character, or None for a set or position; index after the escape)."""
    if i + 1 >= len(pattern):
        raise _Unsupported
    nxt = pattern[i + 1]
    if not nxt.isalnum() and nxt.isascii():
        return nxt, i + 2  # an escaped punctuation character is itself
    if nxt in _CONTROL_ESCAPES:
        return _CONTROL_ESCAPES[nxt], i + 2
    if nxt in _SET_ESCAPES:
        return None, i + 2
    if nxt in "pP":
        if i + 2 < len(pattern) and pattern[i + 2] == "{":
            close = pattern.find("}", i + 3)
            if close < 0:
                raise _Unsupported
            return None, close + 1
        return None, i + 3
    raise _Unsupported  # \x, octal and anything rarer: not worth the risk of misreading


def _skip_class(pattern: str, i: int) -> int:
    """Index just past the character class starting at pattern[i] == '['."""
    j = i + 1
    if j < len(pattern) and pattern[j] == "^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":  # a leading ']' is a member
        j += 1
    while j < len(pattern):
        if pattern[j] == "\\":
            j += 2
            continue
        if pattern.startswith("[:", j):  # [:alpha:] inside a class
            close = pattern.find(":]", j + 2)
            if close < 0:
                raise _Unsupported
            j = close + 2
            continue
        if pattern[j] == "]":
            return j + 1
        j += 1
    raise _Unsupported


def _skip_group(pattern: str, i: int) -> int:
    """Index just past the group starting at pattern[i] == '(' (nested groups and classes included)."""
    depth, j = 0, i
    while j < len(pattern):
        ch = pattern[j]
        if ch == "\\":
            j += 2
            continue
        if ch == "[":
            j = _skip_class(pattern, j)
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    raise _Unsupported
