"""The `json` parser's path expressions (`a.b[0]`, `["key with space"].c`), read as the reference
reads them: its lexer's tokens and errors, and its LALR parser's syntax errors, word for word.

Grammar: a path is a field (`[A-Za-z_][A-Za-z0-9_]*`), `["key"]` or `[index]`, then any number of
`["key"]`, `[index]` or `.field`. The lexer skips spaces, tabs and newlines; a key ends at the next
`"` or `]` (no escapes); an index is digits up to a space, `.` or `]`. A lexer error ends the input
where it happened: the parse then fails with the parser's error unless a path could end there, in
which case the lexer's own error is the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn

from svclog.model import ParseError

# Token kinds, in the parser's token order (its "expecting" lists follow this order)
END, DOT, LSB, RSB, STRING, FIELD, INDEX = "$end", "DOT", "LSB", "RSB", "STRING", "FIELD", "INDEX"
_WHITESPACE = " \t\n"
_INT64_MAX = (1 << 63) - 1


@dataclass(frozen=True)
class _Token:
    kind: str
    value: str | int | None = None


class _Lexer:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.error: str | None = None  # a lexer error ends the input (the token stream says $end)

    def _read(self) -> str:
        if self.pos >= len(self.text):
            self.pos += 1  # reading past the end; an unread steps back
            return "\0"
        char = self.text[self.pos]
        self.pos += 1
        return char

    def next(self) -> _Token:
        while True:
            char = self._read()
            if char == "\0":
                return _Token(END)
            if char in _WHITESPACE:
                continue
            if "0" <= char <= "9":
                self.pos -= 1
                return self._index()
            if char == "[":
                return _Token(LSB)
            if char == "]":
                return _Token(RSB)
            if char == ".":
                return _Token(DOT)
            if _starts_field(char):
                self.pos -= 1
                return self._field()
            if char == '"':
                return self._key()
            return self._fail(f"unexpected char {char}")

    def _fail(self, message: str) -> _Token:
        self.error = message
        return _Token(END)

    def _index(self) -> _Token:
        digits = ""
        while True:
            char = self._read()
            if char == "." and digits:
                return self._fail("cannot use float as array index")
            if char in _WHITESPACE or char in ".]":
                self.pos -= 1
                break
            if not "0" <= char <= "9":
                return self._fail(f"non-integer value: {char}")
            digits += char
        value = int(digits)
        if value > _INT64_MAX:
            return self._fail(f'strconv.Atoi: parsing "{digits}": value out of range')
        return _Token(INDEX, value)

    def _field(self) -> _Token:
        start = self.pos
        while self.pos < len(self.text) and _in_field(self.text[self.pos]):
            self.pos += 1
        return _Token(FIELD, self.text[start : self.pos])

    def _key(self) -> _Token:
        # the opening quote is read; the key runs to the next quote or `]`, which it consumes
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in '"]\0':
            self.pos += 1
        key = self.text[start : self.pos]
        self.pos += 1
        return _Token(STRING, key)


def _starts_field(char: str) -> bool:
    return "a" <= char <= "z" or "A" <= char <= "Z" or char == "_"


def _in_field(char: str) -> bool:
    return _starts_field(char) or "0" <= char <= "9"


# Tokens the parser shifts in the states that report an unexpected token. After a complete path
# any token other than `.` or `[` ends it, and one that is not $end is then unexpected with nothing
# expected (the accepting state shifts nothing).
_START: tuple[str, ...] = (LSB, FIELD)
_AFTER_LSB: tuple[str, ...] = (STRING, INDEX)
_AFTER_DOT: tuple[str, ...] = (FIELD,)
_BEFORE_RSB: tuple[str, ...] = (RSB,)


def parse_json_path(expr: str) -> list[str | int]:
    """The path's fields, keys and indexes, or a ParseError worded as the reference's."""
    lexer = _Lexer(expr)
    path: list[str | int] = []
    token = lexer.next()
    # the first step: a field or a bracket
    if token.kind == FIELD:
        path.append(str(token.value))
        token = lexer.next()
    elif token.kind == LSB:
        token = _bracket(lexer, path)
    else:
        _syntax_error(expr, token, _START)
    # then any number of `.field` or brackets, up to the end
    while token.kind != END:
        if token.kind == DOT:
            token = lexer.next()
            if token.kind != FIELD:
                _syntax_error(expr, token, _AFTER_DOT)
            path.append(str(token.value))
            token = lexer.next()
        elif token.kind == LSB:
            token = _bracket(lexer, path)
        else:
            _syntax_error(expr, token, ())
    if lexer.error is not None:  # the input ended at a lexer error where a path may end
        raise ParseError(f"cannot parse expression [{expr}]: {lexer.error}")
    return path


def _bracket(lexer: _Lexer, path: list[str | int]) -> _Token:
    """After `[`: a key or an index and `]`; returns the token after it."""
    token = lexer.next()
    if token.kind not in _AFTER_LSB:
        _syntax_error(lexer.text, token, _AFTER_LSB)
    value = token.value
    token = lexer.next()
    if token.kind != RSB:
        _syntax_error(lexer.text, token, _BEFORE_RSB)
    path.append(value if isinstance(value, int) else str(value))
    return lexer.next()


def _syntax_error(expr: str, token: _Token, expecting: tuple[str, ...]) -> NoReturn:
    # the parser's error replaces a lexer error that ended the input where no path could end
    message = f"syntax error: unexpected {token.kind}"
    if expecting:
        message += ", expecting " + " or ".join(expecting)
    raise ParseError(f"cannot parse expression [{expr}]: {message}")
