"""Go regular expressions (RE2, via google-re2) with Go's match iteration and `$1` expansion.

Replacement uses Go's `$1`/`${name}` expansion and Go's rule for empty matches next to a
previous match.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

import re2

from svclog.logql.template.limits import check_output
from svclog.model import ParseError, compile_go_regexp


class GoRegexError(ValueError):
    pass


@lru_cache(maxsize=512)
def compile_go(pattern: str) -> re2._Regexp[str]:
    """Compile a Go regexp; raises GoRegexError with Go's message on syntax Go would reject."""
    try:
        return compile_go_regexp(pattern)
    except ParseError as err:
        raise GoRegexError(err.message) from None


def iter_matches(rx: re2._Regexp[str], s: str) -> Iterator[re2._Match[str]]:
    """Matches in Go's order: an empty match right after the previous match is skipped.

    re2's finditer encodes the text once and advances as Go does (one rune past an empty
    match); a `search(s, pos)` per match would re-encode the text each time, quadratic."""
    prev_end = -1
    for m in rx.finditer(s):
        start, end = m.span()
        if start == end and start == prev_end:
            continue
        yield m
        prev_end = end


def count_matches(pattern: str, s: str) -> int:
    return sum(1 for _ in iter_matches(compile_go(pattern), s))


@lru_cache(maxsize=512)
def _parse_template(repl: str) -> tuple[str | int | tuple[str], ...]:
    """Split a Go Expand template: literals, group numbers, (name,) references."""
    parts: list[str | int | tuple[str]] = []
    i, lit = 0, []
    while i < len(repl):
        c = repl[i]
        if c != "$" or i + 1 >= len(repl):
            lit.append(c)
            i += 1
            continue
        if repl[i + 1] == "$":
            lit.append("$")
            i += 2
            continue
        m = re.match(r"\{([A-Za-z0-9_]+)\}|([A-Za-z0-9_]+)", repl[i + 1 :])
        if not m:
            lit.append(c)
            i += 1
            continue
        if lit:
            parts.append("".join(lit))
            lit = []
        name = m.group(1) or m.group(2)
        parts.append(int(name) if name.isdigit() else (name,))
        i += 1 + m.end()
    if lit:
        parts.append("".join(lit))
    return tuple(parts)


def _expand(m: re2._Match[str], parts: tuple[str | int | tuple[str], ...], names: dict[str, int]) -> str:
    # The match's groups are read once: each re2 accessor call costs microseconds.
    values = (m.group(0), *m.groups())
    out: list[str] = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p, int):
            if p < len(values):
                out.append(values[p] or "")
        elif p[0] in names:
            out.append(values[names[p[0]]] or "")
    return "".join(out)


def replace_all(pattern: str, s: str, repl: str, literal: bool = False) -> str:
    """regexp.ReplaceAllString (or ReplaceAllLiteralString)."""
    rx = compile_go(pattern)
    parts = None if literal else _parse_template(repl)
    names = dict(rx.groupindex)
    out: list[str] = []
    last = size = 0
    for m in iter_matches(rx, s):
        piece = repl if parts is None else _expand(m, parts, names)
        size += m.start() - last + len(piece)
        check_output("regexReplaceAll", size)  # `$1` expansions can grow quadratically
        out.append(s[last : m.start()])
        out.append(piece)
        last = m.end()
    out.append(s[last:])
    return "".join(out)
