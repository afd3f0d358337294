"""Lexer for Go text/template source: text, `{{ }}` actions, trim markers, comments.

Produces a flat token list; the parser consumes it. Token kinds follow Go's lexer
(text, delimiters, identifiers, fields, variables, literals, punctuation).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from svclog.logql.template.errors import TemplateError

_SPACE = " \t\r\n"
KEYWORDS = frozenset({"if", "else", "end", "range", "with", "define", "template", "block", "break", "continue"})
# Go's scanNumber: sign, base prefix, digits, fraction, exponent, imaginary suffix.
_NUMBER = re.compile(
    r"[+-]?(?:0[xX][0-9a-fA-F_]*(?:\.[0-9a-fA-F_]*)?(?:[pP][+-]?[0-9_]*)?"
    r"|0[oO][0-7_]*(?:\.[0-7_]*)?|0[bB][01_]*(?:\.[01_]*)?"
    r"|[0-9_]*(?:\.[0-9_]*)?(?:[eE][+-]?[0-9_]*)?)i?"
)
_SIMPLE_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
}


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # text ldelim rdelim ident keyword field var dot string char number bool nil | ( ) , := = eof
    val: str
    pos: int
    spaced: bool = False  # whitespace came right before it (inside an action)


def _is_alnum(c: str) -> bool:
    return c == "_" or c.isalpha() or c.isdigit()


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _at_right_delim(text: str, i: int) -> tuple[bool, bool]:
    """(at `}}`, with a ` -` trim marker before it)."""
    if text.startswith(" -}}", i) or (text[i : i + 1] in ("\t", "\r", "\n") and text.startswith("-}}", i + 1)):
        return True, True
    return text.startswith("}}", i), False


class _Lexer:
    def __init__(self, text: str, name: str) -> None:
        self.text = text
        self.name = name
        self.tokens: list[Token] = []

    def fail(self, pos: int, msg: str) -> TemplateError:
        return TemplateError(f"template: {self.name}:{_line_of(self.text, pos)}: {msg}")

    def run(self) -> list[Token]:
        text, i, n = self.text, 0, len(self.text)
        trim_next = False
        while True:
            j = text.find("{{", i)
            chunk = text[i:] if j < 0 else text[i:j]
            if trim_next:
                chunk = chunk.lstrip(_SPACE)
            if j < 0:
                if chunk:
                    self.tokens.append(Token("text", chunk, i))
                break
            k = j + 2
            trim_left = text.startswith("-", k) and text[k + 1 : k + 2] in (" ", "\t", "\r", "\n")
            if trim_left:
                chunk = chunk.rstrip(_SPACE)
                k += 2
            if chunk:
                self.tokens.append(Token("text", chunk, i))
            if text.startswith("/*", k):
                i, trim_next = self._comment(k)
                continue
            self.tokens.append(Token("ldelim", "{{", j))
            i, trim_next = self._action(k)
        self.tokens.append(Token("eof", "", n))
        return self.tokens

    def _comment(self, k: int) -> tuple[int, bool]:
        end = self.text.find("*/", k + 2)
        if end < 0:
            raise self.fail(k, "unclosed comment")
        p = end + 2
        delim, trim = _at_right_delim(self.text, p)
        if not delim:
            raise self.fail(p, "comment ends before closing delimiter")
        return p + (4 if trim else 2), trim

    def _action(self, i: int) -> tuple[int, bool]:
        text, n = self.text, len(self.text)
        depth, spaced = 0, False
        while True:
            delim, trim = _at_right_delim(text, i)
            if delim:
                if depth:
                    raise self.fail(i, "unclosed left paren")
                self.tokens.append(Token("rdelim", "}}", i, spaced))
                return i + (4 if trim else 2), trim
            if i >= n:
                raise self.fail(i, "unclosed action")
            if text[i] in _SPACE:
                spaced, i = True, i + 1
                continue
            kind, end = self._token(i)
            depth += (kind == "(") - (kind == ")")
            if depth < 0:
                raise self.fail(i, "unexpected right paren")
            self.tokens.append(Token(kind, text[i:end], i, spaced))
            i, spaced = end, False

    def _token(self, i: int) -> tuple[str, int]:
        """Kind and end of the action token starting at i."""
        text, c = self.text, self.text[i]
        if c in "()|,=":
            return c, i + 1
        if c == ":":
            if not text.startswith(":=", i):
                raise self.fail(i, "expected :=")
            return ":=", i + 2
        if c == '"':
            return "string", self._quoted(i, '"', "unterminated quoted string")
        if c == "'":
            return "char", self._quoted(i, "'", "unterminated character constant")
        if c == "`":
            end = text.find("`", i + 1)
            if end < 0:
                raise self.fail(i, "unterminated raw quoted string")
            return "raw", end + 1
        if c == "$" or (c == "." and not text[i + 1 : i + 2].isdigit()):
            end = self._word(i + 1)
            return ("var" if c == "$" else "field" if end > i + 1 else "dot"), end
        if c in "+-." or c.isdigit():
            m = _NUMBER.match(text, i)
            end = m.end() if m and m.end() > i else i + 1
            if end < len(text) and _is_alnum(text[end]):
                raise self.fail(i, f"bad number syntax: {text[i : end + 1]!r}")
            return "number", end
        if _is_alnum(c):
            end = self._word(i)
            word = text[i:end]
            if word in KEYWORDS:
                return "keyword", end
            return ("bool" if word in ("true", "false") else "nil" if word == "nil" else "ident"), end
        raise self.fail(i, f"unrecognized character in action: {c!r}")

    def _word(self, i: int) -> int:
        text, n = self.text, len(self.text)
        while i < n and _is_alnum(text[i]):
            i += 1
        if i < n and not (text[i] in _SPACE or text[i] in ".,|:()=" or _at_right_delim(text, i)[0]):
            raise self.fail(i, f"bad character {text[i]!r}")
        return i

    def _quoted(self, i: int, quote: str, err: str) -> int:
        text, n = self.text, len(self.text)
        i += 1
        while True:
            if i >= n or text[i] == "\n":
                raise self.fail(i, err)
            c = text[i]
            if c == "\\":
                if i + 1 >= n or text[i + 1] == "\n":
                    raise self.fail(i, err)
                i += 2
                continue
            i += 1
            if c == quote:
                return i


def lex(text: str, name: str = "") -> list[Token]:
    return _Lexer(text, name).run()


def unquote(lit: str) -> str:
    """Decode a Go interpreted string or rune literal body (without quotes).

    Escapes build bytes (as Go does: "\\xc3\\xa9" is "é"), decoded as UTF-8 at the end.
    """
    out = bytearray()
    i, n = 0, len(lit)
    while i < n:
        c = lit[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        e = lit[i + 1 : i + 2]
        if e in _SIMPLE_ESCAPES:
            out += _SIMPLE_ESCAPES[e].encode()
            i += 2
        elif e in ('"', "'"):
            out += e.encode()
            i += 2
        elif e in ("x", "u", "U"):
            width = {"x": 2, "u": 4, "U": 8}[e]
            digits = lit[i + 2 : i + 2 + width]
            if len(digits) != width or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise ValueError("invalid syntax")
            v = int(digits, 16)
            if e == "x":
                out.append(v)
            elif v > 0x10FFFF or 0xD800 <= v <= 0xDFFF:
                raise ValueError("invalid syntax")
            else:
                out += chr(v).encode()
            i += 2 + width
        elif e and e in "01234567":
            digits = lit[i + 1 : i + 4]
            if len(digits) != 3 or not all(d in "01234567" for d in digits) or int(digits, 8) > 255:
                raise ValueError("invalid syntax")
            out.append(int(digits, 8))
            i += 4
        else:
            raise ValueError("invalid syntax")
    return out.decode("utf-8", errors="replace")
