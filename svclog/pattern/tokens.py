"""Tokenisation of log lines for pattern mining, and rendering of templates as `|>` patterns.

A line is split into *words* and the *separators* between them (kept verbatim). A word
is a run of word characters (letters, digits, `_`, `.`, `-`, `%`, `<`, `>`) that may
contain `:` and `/` between word characters, so `10.0.0.1`, `2001:db8::1`,
`api/v1/orders`, `cart.go:88` and `01/Nov/2026:00:00:01` are single words while
`key=value`, `"key":"value"` and `[a]` keep their punctuation as separators. Lines
share a template only when their separators are identical, so a template differs from
its lines only in whole words. Rendered, a variable word becomes `<_>` and everything
else is literal text. That keeps every pattern a valid LogQL pattern filter that
matches each line it counted:

- a wildcard always covers one non-empty word, so captures are never empty;
- the literal after a wildcard starts with a separator, which cannot begin inside the
  word (a word ends with a word character and holds no other separator character), so
  the filter's first-occurrence search stops exactly at the word's end; the one
  exception, a line ending in `:` or `/` right after a variable word, is rendered with
  the wildcard covering that tail;
- two wildcards are always separated by a separator, so `<_><_>` never arises.

A literal word that would read as a capture (`<name>`) is rendered as `<_>` too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

WILDCARD = "<_>"

_W = r"[\w.\-<>%]"
# The capture group makes re.split return separators and words alternately.
_SPLIT = re.compile(rf"({_W}+(?:[:/]+{_W}+)*)")
_COLONS_SLASHES = re.compile(r"[:/]+")
# Same shape as a capture of the LogQL pattern syntax.
_CAPTURE_LIKE = re.compile(r"<[A-Za-z_][A-Za-z0-9_]*>")
_DIGIT = re.compile(r"\d")


@dataclass(frozen=True, slots=True)
class Tokens:
    """A tokenised line: `words[i]` sits between `seps[i]` and `seps[i + 1]` (words are
    never empty; the first and last separators may be)."""

    words: tuple[str, ...]
    seps: tuple[str, ...]

    @property
    def signature(self) -> tuple[str, ...]:
        return self.seps


def tokenize(line: str) -> Tokens:
    parts = _SPLIT.split(line)
    return Tokens(tuple(parts[1::2]), tuple(parts[0::2]))


def has_digit(word: str) -> bool:
    return _DIGIT.search(word) is not None


def render(words: list[str | None], seps: tuple[str, ...]) -> str:
    """The `|>` pattern of a template: None (a variable word) becomes `<_>`."""
    out: list[str] = []
    for sep, word in zip(seps, words):
        out.append(sep)
        if word is None or _CAPTURE_LIKE.search(word):
            out.append(WILDCARD)
        else:
            out.append(word)
    tail = seps[-1]
    if words and words[-1] is None and _COLONS_SLASHES.fullmatch(tail):
        tail = ""  # `|>` would find the tail inside the word: let the wildcard cover it
    out.append(tail)
    return "".join(out)
