"""Go (RE2) regular expressions on Python's `re`: syntax translation and Go's match iteration.

Translation covers what differs in practice: `\\z`, `$` at end of text, ASCII `\\d\\w\\s`,
POSIX classes, `\\Q..\\E`, `(?<name>`, `\\x{..}` and mid-pattern flag groups; constructs
RE2 rejects (backreferences, lookaround) are rejected. Replacement uses Go's
`$1`/`${name}` expansion and Go's rule for empty matches next to a previous match.
"""
from __future__ import annotations

import re
from functools import lru_cache

_POSIX = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7f", "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f", "digit": "0-9", "graph": "!-~", "lower": "a-z",
    "print": " -~", "punct": "!-/:-@\\[-`{-~", "space": "\\t\\n\\v\\f\\r ", "upper": "A-Z",
    "word": "0-9A-Za-z_", "xdigit": "0-9A-Fa-f",
}
_PERL = {"d": "0-9", "w": "0-9A-Za-z_", "s": "\\t\\n\\f\\r "}


class GoRegexError(ValueError):
    pass


class _Translator:
    def __init__(self, src: str) -> None:
        self.src = src
        self.i = 0
        self.out: list[str] = []
        self.multiline = False
        # per open group: how many scoped flag groups we opened inside it
        self.open_flags: list[int] = [0]

    def run(self) -> str:
        src = self.src
        while self.i < len(src):
            c = src[self.i]
            if c == "\\":
                self.escape(in_class=False)
            elif c == "[":
                self.char_class()
            elif c == "(":
                self.group()
            elif c == ")":
                self.out.append(")" * (self.open_flags.pop() + 1))
                if not self.open_flags:
                    raise GoRegexError(f"error parsing regexp: unexpected ): `{src}`")
                self.i += 1
            elif c == "$":
                self.out.append("$" if self.multiline else r"\Z")
                self.i += 1
            else:
                self.out.append(c)
                self.i += 1
        if len(self.open_flags) != 1:
            raise GoRegexError(f"error parsing regexp: missing closing ): `{src}`")
        return "".join(self.out) + ")" * self.open_flags[0]

    def group(self) -> None:
        src, i = self.src, self.i
        if src.startswith("(?P<", i) or (src.startswith("(?<", i) and src[i + 3 : i + 4] not in ("=", "!")):
            start = src.index("<", i) + 1
            end = src.find(">", start)
            if end < 0:
                raise GoRegexError(f"error parsing regexp: invalid named capture: `{src}`")
            self.out.append(f"(?P<{src[start:end]}>")
            self.i = end + 1
            self.open_flags.append(0)
            return
        m = re.match(r"\(\?([imsU-]*)(:|\))", src[i:])
        if src.startswith("(?", i) and not m:
            raise GoRegexError(f"error parsing regexp: invalid or unsupported Perl syntax: `{src[i:i + 3]}`")
        if m:
            flags = m.group(1)
            if "U" in flags:
                raise GoRegexError("error parsing regexp: the U flag is not supported")
            on = flags.split("-")[0]
            if "m" in on:
                self.multiline = True
            py_flags = flags if flags.replace("-", "") else ""
            self.i += m.end()
            if m.group(2) == ":":
                self.out.append(f"(?{py_flags}:" if py_flags else "(?:")
                self.open_flags.append(0)
            elif py_flags:
                # (?i) applies to the rest of the enclosing group: open a scoped group.
                self.out.append(f"(?{py_flags}:")
                self.open_flags[-1] += 1
            return
        self.out.append("(")
        self.open_flags.append(0)
        self.i += 1

    def escape(self, in_class: bool) -> None:
        src, i = self.src, self.i
        e = src[i + 1 : i + 2]
        self.i += 2
        if not e:
            raise GoRegexError("error parsing regexp: trailing backslash at end of expression")
        if e in "123456789" and not in_class:
            raise GoRegexError(f"error parsing regexp: invalid escape sequence: `\\{e}`")
        if e == "z":
            self.out.append(r"\Z")
        elif e == "Q":
            end = src.find("\\E", self.i)
            end = len(src) if end < 0 else end
            self.out.append(re.escape(src[self.i : end]))
            self.i = end + 2
        elif e in _PERL:
            self.out.append(_PERL[e] if in_class else f"[{_PERL[e]}]")
        elif e in ("D", "W", "S"):
            self.out.append(f"[^{_PERL[e.lower()]}]" if not in_class else "\\" + e)
        elif e == "x" and src[self.i : self.i + 1] == "{":
            end = src.index("}", self.i)
            self.out.append(f"\\U{int(src[self.i + 1 : end], 16):08x}")
            self.i = end + 1
        elif e in ("p", "P"):
            raise GoRegexError("error parsing regexp: Unicode classes are not supported")
        else:
            self.out.append("\\" + e)

    def char_class(self) -> None:
        src = self.src
        self.out.append("[")
        self.i += 1
        if src[self.i : self.i + 1] == "^":
            self.out.append("^")
            self.i += 1
        first = True
        while True:
            if self.i >= len(src):
                raise GoRegexError(f"error parsing regexp: missing closing ]: `{src}`")
            c = src[self.i]
            if c == "]" and not first:
                self.out.append("]")
                self.i += 1
                return
            first = False
            m = re.match(r"\[:(\^?)([a-z]+):\]", src[self.i :])
            if m and m.group(2) in _POSIX:
                if m.group(1):
                    raise GoRegexError("error parsing regexp: negated POSIX classes are not supported")
                self.out.append(_POSIX[m.group(2)])
                self.i += m.end()
            elif c == "\\":
                self.escape(in_class=True)
            else:
                self.out.append("\\" + c if c in "[]&~|-" and not self._is_range_dash() else c)
                self.i += 1

    def _is_range_dash(self) -> bool:
        src, i = self.src, self.i
        return src[i] == "-" and i > 0 and src[i - 1] not in "[^" and src[i + 1 : i + 2] not in ("]", "")


@lru_cache(maxsize=512)
def compile_go(pattern: str) -> re.Pattern[str]:
    """Compile a Go regexp; raises GoRegexError on syntax Go would reject."""
    try:
        return re.compile(_Translator(pattern).run())
    except re.error as exc:
        raise GoRegexError(f"error parsing regexp: {exc.msg}: `{pattern}`") from None


def iter_matches(rx: re.Pattern[str], s: str):
    """Matches in Go's order: an empty match right after the previous match is skipped."""
    pos, prev_end, n = 0, -1, len(s)
    while pos <= n:
        m = rx.search(s, pos)
        if m is None:
            return
        start, end = m.span()
        if start == end and start == prev_end:
            pos = start + 1
            continue
        yield m
        prev_end = end
        pos = end if end > start else end + 1


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


def _expand(m: re.Match[str], parts: tuple[str | int | tuple[str], ...]) -> str:
    out: list[str] = []
    groups = m.re.groupindex
    for p in parts:
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p, int):
            if p <= m.re.groups:
                out.append(m.group(p) or "")
        elif p[0] in groups:
            out.append(m.group(p[0]) or "")
    return "".join(out)


def replace_all(pattern: str, s: str, repl: str, literal: bool = False) -> str:
    """regexp.ReplaceAllString (or ReplaceAllLiteralString)."""
    rx = compile_go(pattern)
    parts = None if literal else _parse_template(repl)
    out: list[str] = []
    last = 0
    for m in iter_matches(rx, s):
        out.append(s[last : m.start()])
        out.append(repl if parts is None else _expand(m, parts))
        last = m.end()
    out.append(s[last:])
    return "".join(out)
