"""LogQL tokenizer: turns query text into the tokens `grammar.lark` declares.

It follows the reference lexer's rules rather than a regex table, because LogQL
is context sensitive in a few places: `5m` is a duration and `20KB` a byte size
only when written without a space, `[...]` is read raw as a range, function
names are keywords only when an opening parenthesis (or `by`/`without (`)
follows, and keywords are case-insensitive.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterator
from typing import TypeVar

from lark import Token
from lark.lexer import Lexer

from svclog.gocompat.durations import parse_go_duration
from svclog.gocompat.humanize import parse_bytes
from svclog.gocompat.strconv import unquote_double
from svclog.model import ParseError, SvcError, parse_prom_duration

_T = TypeVar("_T")

# Keywords recognised wherever they appear (case-insensitively).
KEYWORDS = {
    "by": "BY",
    "without": "WITHOUT",
    "bool": "BOOL",
    "offset": "OFFSET",
    "on": "ON",
    "ignoring": "IGNORING",
    "group_left": "GROUP_LEFT",
    "group_right": "GROUP_RIGHT",
    "or": "OR",
    "and": "AND",
    "unless": "UNLESS",
    "json": "JSON",
    "regexp": "REGEXP",
    "logfmt": "LOGFMT",
    "unpack": "UNPACK",
    "pattern": "PATTERN",
    "label_format": "LABEL_FMT",
    "line_format": "LINE_FMT",
    "decolorize": "DECOLORIZE",
    "drop": "DROP",
    "keep": "KEEP",
    "unwrap": "UNWRAP",
}

RANGE_OPS = (
    "count_over_time",
    "rate",
    "rate_counter",
    "bytes_over_time",
    "bytes_rate",
    "avg_over_time",
    "sum_over_time",
    "min_over_time",
    "max_over_time",
    "stdvar_over_time",
    "stddev_over_time",
    "quantile_over_time",
    "first_over_time",
    "last_over_time",
    "absent_over_time",
)
VECTOR_OPS = (
    "sum",
    "avg",
    "max",
    "min",
    "count",
    "stddev",
    "stdvar",
    "bottomk",
    "topk",
    "sort",
    "sort_desc",
    "approx_topk",
)

# Keywords only when used as a function: otherwise they are ordinary label names.
FUNCTIONS = {
    **{name: "RANGE_OP" for name in RANGE_OPS},
    **{name: "VECTOR_OP" for name in VECTOR_OPS},
    "vector": "VECTOR",
    "label_replace": "LABEL_REPLACE",
    "ip": "IP",
    "bytes": "CONV_OP",
    "duration": "CONV_OP",
    "duration_seconds": "CONV_OP",
}

TWO_CHAR_OPS = {
    "!=": "NEQ",
    "=~": "RE",
    "!~": "NRE",
    "!>": "NPA",
    "|=": "PIPE_EXACT",
    "|~": "PIPE_MATCH",
    "|>": "PIPE_PATTERN",
    "==": "CMP_EQ",
    ">=": "GTE",
    "<=": "LTE",
}
ONE_CHAR_OPS = {
    "{": "_LBRACE",
    "}": "_RBRACE",
    "(": "_LPAREN",
    ")": "_RPAREN",
    ",": "_COMMA",
    "=": "EQ",
    "|": "_PIPE",
    "+": "ADD",
    "-": "SUB",
    "*": "MUL",
    "/": "DIV",
    "%": "MOD",
    "^": "POW",
    ">": "GT",
    "<": "LT",
}
PARSER_FLAGS = ("--strict", "--keep-empty")

_WHITESPACE = " \t\n\r"
_DURATION_RUNES = set("nuµmshdwy")
_BYTES_RUNES = set("BikKMGTP")


def is_ident_start(ch: str) -> bool:
    return ch == "_" or ch.isalpha()


def is_ident_part(ch: str) -> bool:
    return ch == "_" or ch.isalpha() or unicodedata.category(ch) == "Nd"


def parse_logql_duration(text: str) -> int:
    """A duration literal in a label filter or offset: PromQL units first, then Go's."""
    try:
        return parse_prom_duration(text)
    except (ValueError, SvcError):
        return parse_go_duration(text)


class _Scanner:
    """Walks the text once, producing lark tokens with 1-based line/column positions."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.line = 1
        self.line_start = 0

    # ---------------------------------------------------------- helpers

    def peek(self, offset: int = 0) -> str:
        i = self.pos + offset
        return self.text[i] if i < len(self.text) else ""

    def advance(self, count: int) -> None:
        for ch in self.text[self.pos : self.pos + count]:
            self.pos += 1
            if ch == "\n":
                self.line += 1
                self.line_start = self.pos

    def column(self, pos: int | None = None) -> int:
        pos = self.pos if pos is None else pos
        return pos - self.text.rfind("\n", 0, pos)

    def error(self, message: str, pos: int | None = None) -> ParseError:
        pos = self.pos if pos is None else pos
        line = self.text.count("\n", 0, pos) + 1
        col = self.column(pos)
        return ParseError(f"parse error at line {line}, col {col}: {message}", line, col)

    def token(self, kind: str, value: str, start: int) -> Token:
        line = self.text.count("\n", 0, start) + 1
        return Token(kind, value, start_pos=start, line=line, column=self.column(start), end_pos=self.pos)

    # ---------------------------------------------------------- main loop

    def tokens(self) -> Iterator[Token]:
        while True:
            self.skip_space_and_comments()
            if self.pos >= len(self.text):
                return
            yield self.next_token()

    def skip_space_and_comments(self) -> None:
        while self.pos < len(self.text):
            ch = self.peek()
            if ch in _WHITESPACE:
                self.advance(1)
            elif ch == "#" or (ch == "/" and self.peek(1) == "/"):
                end = self.text.find("\n", self.pos)
                self.advance((len(self.text) if end < 0 else end) - self.pos)
            elif ch == "/" and self.peek(1) == "*":
                end = self.text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.error("comment not terminated")
                self.advance(end + 2 - self.pos)
            else:
                return

    def next_token(self) -> Token:
        start = self.pos
        ch = self.peek()
        if ch.isdigit() or (ch == "." and self.peek(1).isdigit()):
            return self.number(start)
        if ch == '"':
            return self.token("STRING", self.double_quoted(), start)
        if ch == "`":
            return self.token("STRING", self.raw_string(), start)
        if ch == "[":
            return self.range_literal(start)
        if is_ident_start(ch):
            return self.word(start)
        if ch == "-":
            found = self.flag_or_negative_duration(start)
            if found is not None:
                return found
        pair = self.text[self.pos : self.pos + 2]
        if pair in TWO_CHAR_OPS:
            self.advance(2)
            return self.token(TWO_CHAR_OPS[pair], pair, start)
        if ch in ONE_CHAR_OPS:
            self.advance(1)
            return self.token(ONE_CHAR_OPS[ch], ch, start)
        self.advance(1)
        return self.token("ILLEGAL", ch, start)

    # ---------------------------------------------------------- token kinds

    def number(self, start: int) -> Token:
        text = self.text
        i = self.pos
        if text.startswith(("0x", "0X"), i):
            i += 2
            while i < len(text) and (text[i] in "0123456789abcdefABCDEF_."):
                i += 1
            if i < len(text) and text[i] in "pP":
                i = _scan_exponent(text, i)
        else:
            while i < len(text) and (text[i].isdigit() or text[i] in "_."):
                if text[i] == "." and "." in text[self.pos : i]:
                    break
                i += 1
            if i < len(text) and text[i] in "eE":
                i = _scan_exponent(text, i)
        number = text[self.pos : i]
        self.advance(i - self.pos)
        if _is_bad_octal(number):
            raise self.error(f"invalid digit {_bad_octal_digit(number)!r} in octal literal", start)
        suffix = self.unit_suffix(_DURATION_RUNES | {"."})
        if suffix and _try(parse_logql_duration, number + suffix) is not None:
            self.advance(len(suffix))
            return self.token("DURATION", number + suffix, start)
        suffix = self.unit_suffix(_BYTES_RUNES | {"."})
        if suffix and _try(parse_bytes, number + suffix) is not None:
            self.advance(len(suffix))
            return self.token("BYTES", number + suffix, start)
        return self.token("NUMBER", number, start)

    def unit_suffix(self, allowed: set[str], skip: int = 0) -> str:
        """The run of digits and unit letters glued to a number (what the reference tries as a unit)."""
        start = i = self.pos + skip
        while i < len(self.text) and (self.text[i] in allowed or self.text[i].isnumeric()):
            i += 1
        return self.text[start:i]

    def flag_or_negative_duration(self, start: int) -> Token | None:
        if self.peek(1) == "-":
            i = self.pos + 1
            while i < len(self.text) and (self.text[i].isalpha() or self.text[i] == "-"):
                i += 1
            flag = self.text[self.pos : i]
            if flag in PARSER_FLAGS:
                self.advance(len(flag))
                return self.token("FLAG", flag, start)
        suffix = self.unit_suffix(_DURATION_RUNES | {"."}, skip=1)
        if suffix and _try(parse_go_duration, "-" + suffix) is not None:
            self.advance(1 + len(suffix))
            return self.token("DURATION", "-" + suffix, start)
        return None

    def double_quoted(self) -> str:
        start = self.pos
        i = self.pos + 1
        while True:
            if i >= len(self.text) or self.text[i] == "\n":
                raise self.error("literal not terminated", start)
            if self.text[i] == "\\":
                i += 2
                continue
            if self.text[i] == '"':
                break
            i += 1
        body = self.text[start + 1 : i]
        self.advance(i + 1 - start)
        try:
            return unquote_double(body)
        except ValueError as err:
            raise self.error(str(err), start) from None

    def raw_string(self) -> str:
        start = self.pos
        end = self.text.find("`", start + 1)
        if end < 0:
            raise self.error("literal not terminated", start)
        self.advance(end + 1 - start)
        return self.text[start + 1 : end]

    def range_literal(self, start: int) -> Token:
        end = self.text.find("]", start + 1)
        if end < 0:
            self.advance(len(self.text) - self.pos)
            raise self.error("missing closing ']' in duration")
        body = self.text[start + 1 : end]
        self.advance(end + 1 - start)
        try:
            parse_prom_duration(body)
        except (ValueError, SvcError):
            raise self.error(f'not a valid duration string: "{body}"') from None
        return self.token("RANGE", body, start)

    def word(self, start: int) -> Token:
        i = self.pos + 1
        while i < len(self.text) and is_ident_part(self.text[i]):
            i += 1
        text = self.text[self.pos : i]
        self.advance(i - self.pos)
        lower = text.lower()
        if lower in FUNCTIONS:
            if self.followed_by_call():
                return self.token(FUNCTIONS[lower], lower, start)
            return self.token("IDENTIFIER", text, start)
        if lower in KEYWORDS:
            return self.token(KEYWORDS[lower], lower, start)
        return self.token("IDENTIFIER", text, start)

    def followed_by_call(self) -> bool:
        """Is the next thing `(` or `by (`/`without (`? That makes a name a function."""
        rest = self.text[self.pos :].lstrip()
        if rest.startswith("("):
            return True
        for word in ("by", "without"):
            if rest[: len(word)].lower() == word:
                return rest[len(word) :].lstrip().startswith("(")
        return False


def _scan_exponent(text: str, i: int) -> int:
    i += 1
    if i < len(text) and text[i] in "+-":
        i += 1
    while i < len(text) and (text[i].isdigit() or text[i] == "_"):
        i += 1
    return i


def _is_bad_octal(number: str) -> bool:
    return len(number) > 1 and number[0] == "0" and number.isdigit() and any(d in "89" for d in number)


def _bad_octal_digit(number: str) -> str:
    return next(d for d in number if d in "89")


def _try(func: Callable[[str], _T], text: str) -> _T | None:
    try:
        return func(text)
    except (ValueError, OverflowError, SvcError):
        return None


def tokenize(text: str) -> Iterator[Token]:
    return _Scanner(text).tokens()


class LogQLLexer(Lexer):
    """Plugs `tokenize` into lark's LALR parser."""

    def __init__(self, lexer_conf: object) -> None:
        pass

    def lex(self, data: str) -> Iterator[Token]:  # type: ignore[override]
        return tokenize(data)
