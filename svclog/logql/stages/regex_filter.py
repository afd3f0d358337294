"""Regex line and label filters as the reference runs them: rewritten into literal filters.

The reference parses a `|~`/`!~` operand or a label filter's `=~`/`!~` regex with Go's
regexp/syntax and, from the tree's shape, builds plain filters where it can:
- a literal is `contains` for a line, `equal` for a label; with (?i) both keep the fold;
- a concatenation of one literal and `.*` pieces (`miss.*`, `.*miss.*`) is `contains`,
  for labels too (so `msg=~"miss.*"` keeps "cache miss");
- a literal followed by an alternation (`b(?:ar|(?:)|uzz)`, which Go's parser makes of
  `bar|b|buzz`) is `contains` of each spelled-out leg, for labels too;
- `.*` and the empty regex keep everything, `.+` keeps what is not empty;
- an alternation is the `or` of its legs, and an `or` with an always-true leg is its other
  leg (so `cache miss|` is `contains "cache miss"`).
Anything else is a real regex, anchored for labels and without `(?s)` (`.` stops at a newline).
The legs of one alternation that extend a literal share the literal's byte buffer, as Go's
slices do: a leg whose text fits the buffer's spare capacity overwrites the text of earlier
legs there (the reference's `foo(?:bar.*|qux.*)` keeps "fooqux" lines but not "foobar").
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from svclog.logql.goregexp.classes import go_to_lower
from svclog.logql.goregexp.parser import parse_perl
from svclog.logql.goregexp.syntax import FOLD_CASE, Node, Op, to_re2
from svclog.model import ParseError, compile_go_regexp

# ---------------------------------------------------------------- the filters


@dataclass(frozen=True)
class Always:
    """Keeps everything (the reference's TrueFilter)."""


@dataclass(frozen=True)
class Exists:
    """Keeps non-empty values (`.+`)."""


@dataclass(frozen=True)
class Contains:
    needle: bytes
    fold: bool  # needle is lowered; compared as the reference's containsLower does


@dataclass(frozen=True)
class Equal:
    value: bytes
    fold: bool


@dataclass(frozen=True)
class Regex:
    pattern: str  # RE2, searched (label patterns come anchored)


@dataclass(frozen=True)
class Or:
    left: Filter
    right: Filter


@dataclass(frozen=True)
class Not:
    inner: Filter


Filter = Always | Exists | Contains | Equal | Regex | Or | Not
ALWAYS = Always()


@functools.lru_cache(maxsize=1024)
def regex_filter(pattern: str, *, label: bool, negate: bool) -> Filter:
    """The filter the reference builds for a regex operand (`label`: a label filter's matcher).

    Raises GoRegexError where Go's parser rejects the pattern."""
    tree = parse_perl(pattern)
    built = _Simplifier(label).simplify(tree)
    if built is None:
        # what Go compiles is its tree: rendered, or the text itself when the tree has
        # Unicode tables (their runes are not kept); a label regex matches the whole value
        regex = to_re2(tree) or _closed_quote(pattern)
        found: Filter = Regex(f"^(?:{regex})$" if label else regex)
    else:
        found = _freeze(built)
    return Not(found) if negate else found


def _closed_quote(pattern: str) -> str:
    """The pattern with a `\\Q` left open at its end closed, so it can be wrapped."""
    at, quoted = 0, False
    while at < len(pattern):
        if quoted:
            if pattern.startswith("\\E", at):
                quoted, at = False, at + 2
            else:
                at += 1
        elif pattern.startswith("\\Q", at):
            quoted, at = True, at + 2
        else:
            at += 2 if pattern[at] == "\\" else 1
    return pattern + "\\E" if quoted else pattern


# ---------------------------------------------------------------- Go's byte slices


class _Buffer:
    """A Go byte array: slices into it see later writes."""

    def __init__(self, size: int):
        self.data = bytearray(size)


@dataclass(frozen=True)
class _Slice:
    buffer: _Buffer
    length: int

    def append(self, text: bytes) -> _Slice:
        """Go's append: in place when it fits the capacity, else into a new, larger array."""
        need = self.length + len(text)
        if need <= len(self.buffer.data):
            self.buffer.data[self.length : need] = text
            return _Slice(self.buffer, need)
        grown = _Buffer(_round_up_size(_next_capacity(need, len(self.buffer.data))))
        grown.data[: self.length] = self.buffer.data[: self.length]
        grown.data[self.length : need] = text
        return _Slice(grown, need)

    def bytes(self) -> bytes:
        return bytes(self.buffer.data[: self.length])


_EMPTY = _Slice(_Buffer(0), 0)
# Go's malloc size classes up to 32 KiB (runtime/sizeclasses.go): a byte slice's capacity
_SIZE_CLASSES = (8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384,
                 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688,
                 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880, 12288,
                 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768)  # fmt: skip


def _next_capacity(need: int, old: int) -> int:
    if need > 2 * old:
        return need
    if old < 256:
        return 2 * old
    cap = old
    while cap < need:
        cap += (cap + 3 * 256) >> 2
    return cap


def _round_up_size(size: int) -> int:
    for size_class in _SIZE_CLASSES:
        if size <= size_class:
            return size_class
    return -(-size // 8192) * 8192


@dataclass(frozen=True)
class _LiveContains:
    """A case-sensitive contains filter still reading its slice (frozen once all is built)."""

    slice: _Slice


@dataclass(frozen=True)
class _BuiltOr:
    left: _Built
    right: _Built


_Built = Always | Exists | Contains | Equal | _LiveContains | _BuiltOr


def _or(left: _Built | None, right: _Built) -> _Built:
    """The reference's `or` of two filters: an always-true side is dropped, not kept."""
    if left is None or isinstance(left, Always):
        return right
    if isinstance(right, Always):
        return left
    return _BuiltOr(left, right)


def _freeze(built: _Built) -> Filter:
    if isinstance(built, _LiveContains):
        return Contains(built.slice.bytes(), False)
    if isinstance(built, _BuiltOr):
        return Or(_freeze(built.left), _freeze(built.right))
    return built


# ---------------------------------------------------------------- the reference's simplifier


def _runes(re: Node) -> bytes:
    return "".join(map(chr, re.runes)).encode("utf-8", "surrogatepass")


def _folded(re: Node) -> bool:
    return bool(re.flags & FOLD_CASE)


def _clear_capture(*nodes: Node) -> None:
    for node in nodes:
        if node.op == Op.CAPTURE:
            node.assign(node.subs[0])


def _is_dot_star(re: Node) -> bool:
    return re.op == Op.STAR and re.subs[0].op == Op.ANY_CHAR_NOT_NL


class _Simplifier:
    def __init__(self, label: bool):
        self.label = label

    def simplify(self, re: Node) -> _Built | None:
        if re.op == Op.ALTERNATE:
            _clear_capture(*re.subs)
            built: _Built | None = None
            for sub in re.subs:
                leg = self.simplify(sub)
                if leg is None:
                    return None
                built = leg if built is None else _or(built, leg)
            return built
        if re.op == Op.CONCAT:
            return self.concat(re, None)
        if re.op == Op.CAPTURE:
            _clear_capture(re)
            return self.simplify(re)
        if re.op == Op.LITERAL:
            if self.label:
                text = _runes(re)
                return Equal(_go_lower(text) if _folded(re) else text, _folded(re))
            return self.contains(_EMPTY.append(_runes(re)), _folded(re))
        if _is_dot_star(re) or re.op == Op.EMPTY_MATCH:
            return ALWAYS
        if re.op == Op.PLUS and re.subs[0].op == Op.ANY_CHAR_NOT_NL:
            return Exists()
        return None

    @staticmethod
    def contains(text: _Slice, fold: bool) -> _Built:
        if text.length == 0:
            return ALWAYS
        # a folded needle is lowered into a copy; a plain one keeps reading the slice
        return Contains(_go_lower(text.bytes()), True) if fold else _LiveContains(text)

    def concat(self, re: Node, base: _Slice | None) -> _Built | None:
        """One literal among `.*` pieces, or a literal then alternations of its continuations."""
        _clear_capture(*re.subs)
        re.subs[:] = [sub for sub in re.subs if sub.op != Op.EMPTY_MATCH]
        if len(re.subs) > 3:
            return None
        built: _Built | None = None
        literals, fold = 0, False
        for sub in re.subs:
            if sub.op == Op.LITERAL:
                if literals:
                    return None
                literals += 1
                base = (base or _EMPTY).append(_runes(sub))
                fold = _folded(sub)
            elif sub.op == Op.ALTERNATE and base is not None:
                built = self.concat_alternate(sub, base, built, fold)
                if built is None:
                    return None
            elif not _is_dot_star(sub):
                return None
        if built is not None:
            return built
        return self.contains(base, fold) if base is not None else None

    def concat_alternate(self, re: Node, base: _Slice, built: _Built | None, fold: bool) -> _Built | None:
        for alt in re.subs:
            if not fold and _folded(alt):
                return None  # a plain prefix and a folded rest fit neither kind of contains
            if alt.op == Op.EMPTY_MATCH or _is_dot_star(alt):
                leg: _Built | None = self.contains(base, fold)
            elif alt.op == Op.LITERAL:
                leg = self.contains(_EMPTY.append(base.bytes() + _runes(alt)), fold)
            elif alt.op == Op.CONCAT:
                leg = self.concat(alt, base)
            else:
                return None
            if leg is None:
                return None
            built = leg if built is None else _or(built, leg)
        return built


# ---------------------------------------------------------------- case folding


def _go_lower(text: bytes) -> bytes:
    """Go's bytes.ToLower."""
    if text.isascii():
        return text.lower()
    return "".join(chr(go_to_lower(ord(ch))) for ch in text.decode("utf-8", "replace")).encode()


@functools.cache
def _ascii_lower_preimages() -> dict[int, tuple[int, ...]]:
    """Non-ASCII runes that Go's ToLower maps to an ASCII letter (the Kelvin sign to k, U+0130 to i)."""
    found: dict[int, list[int]] = {}
    for r in range(0x80, 0x20000):
        lower = go_to_lower(r)
        if lower < 0x80:
            found.setdefault(lower, []).append(r)
    return {lower: tuple(runes) for lower, runes in found.items()}


def _fold_pattern(needle: bytes) -> str | None:
    """An RE2 pattern finding what containsLower finds for an ASCII needle: a line rune matches
    a needle byte when Go's ToLower of it is that byte, but the first must be ASCII itself (the
    reference compares first bytes before runes). None for a non-ASCII needle."""
    if not needle.isascii():
        return None
    parts = []
    for j, byte in enumerate(needle):
        runes = {byte, ord(chr(byte).upper())} | ({*_ascii_lower_preimages().get(byte, ())} if j else set())
        parts.append("[" + "".join(f"\\x{{{r:x}}}" for r in sorted(runes)) + "]")
    return "".join(parts)


def check_regex(pattern: str) -> None:
    """Raise ParseError (Go's wording) when RE2 rejects the pattern (kernels compile lazily)."""
    compile_go_regexp(pattern)
    try:
        pc.match_substring_regex(pa.array([""], pa.string()), pattern)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
        raise ParseError(f"error parsing regexp: {err}") from err


def check_regexes(found: Filter) -> None:
    """Compile the real regexes a filter runs, so a bad one fails the query before any data."""
    if isinstance(found, Regex):
        check_regex(found.pattern)
    elif isinstance(found, Or):
        check_regexes(found.left)
        check_regexes(found.right)
    elif isinstance(found, Not):
        check_regexes(found.inner)


def literal_regex(text: str) -> str:
    """An RE2 pattern matching `text` literally: every ASCII character that is not a word
    character is written as a `\\x{..}` escape, which RE2 reads as that character."""
    return "".join(ch if ch.isalnum() or ch == "_" or ord(ch) > 127 else f"\\x{{{ord(ch):x}}}" for ch in text)


def filter_mask(found: Filter, values: pa.Array) -> pa.Array:
    """Which values (lines, or label values with absent ones as "") the filter keeps."""
    if isinstance(found, Always):
        return pa.repeat(pa.scalar(True), len(values))
    if isinstance(found, Exists):
        return pc.greater(pc.binary_length(values), 0)
    if isinstance(found, Regex):
        return pc.match_substring_regex(values, found.pattern)
    if isinstance(found, Or):
        return pc.or_(filter_mask(found.left, values), filter_mask(found.right, values))
    if isinstance(found, Not):
        return pc.invert(filter_mask(found.inner, values))
    if isinstance(found, Contains):
        if found.fold:
            pattern = _fold_pattern(found.needle)
            if pattern is None:
                return _per_value(values, lambda value: _contains_lower(value, found.needle))
            return pc.match_substring_regex(values, pattern)
        if not _is_utf8(found.needle):
            return _per_value(values, lambda value: found.needle in value)
        # RE2 finds a literal with a memchr-driven scan: ~2.5x Arrow's match_substring kernel
        return pc.match_substring_regex(values, literal_regex(found.needle.decode()))
    if found.fold:
        size = len(found.value)
        pattern = _fold_pattern(found.value)
        if pattern is None:
            return _per_value(values, lambda value: len(value) == size and _contains_lower(value, found.value))
        same_size = pc.equal(pc.binary_length(values), size)
        return pc.and_(same_size, pc.match_substring_regex(values, f"^{pattern}"))
    return pc.equal(values, found.value.decode())


def _is_utf8(text: bytes) -> bool:
    try:
        text.decode()
    except UnicodeDecodeError:
        return False
    return True


def _per_value(values: pa.Array, test: Callable[[bytes], bool]) -> pa.Array:
    """The rare filters no kernel runs (non-ASCII folds): once per distinct value."""
    distinct = pc.unique(values)
    hits = pa.array([test(value.encode()) for value in distinct.to_pylist()], pa.bool_())
    return pc.take(hits, pc.index_in(values, value_set=distinct))


def _contains_lower(line: bytes, needle: bytes) -> bool:
    """The reference's containsLower: the needle is lowered; each start byte is compared
    ASCII-lowered first, then rune by rune with Go's ToLower of the line's rune."""
    if not needle:
        return True
    for start in range(len(line) - len(needle) + 1):
        first = line[start] + 32 if 0x41 <= line[start] <= 0x5A else line[start]
        if first != needle[0]:
            continue
        at, k = start, 0
        while at < len(line) and k < len(needle):
            c, s = line[at], needle[k]
            if c < 0x80 and s < 0x80:
                if (c + 32 if 0x41 <= c <= 0x5A else c) != s:
                    break
                at, k = at + 1, k + 1
                continue
            line_rune, line_size = _decode_rune(line, at)
            needle_rune, needle_size = _decode_rune(needle, k)
            if line_rune < 0 and (c + 32 if 0x41 <= c <= 0x5A else c) == s:
                at, k = at + 1, k + 1  # an invalid byte compares as a byte
                continue
            if line_rune < 0 or needle_rune < 0 or go_to_lower(line_rune) != needle_rune:
                break
            at, k = at + line_size, k + needle_size
        else:
            if k == len(needle):
                return True
    return False


def _decode_rune(text: bytes, at: int) -> tuple[int, int]:
    """The rune at text[at] and its size; (-1, 1) for an invalid byte."""
    lead = text[at]
    size = (
        1
        if lead < 0x80
        else 2
        if lead >> 5 == 0b110
        else 3
        if lead >> 4 == 0b1110
        else 4
        if lead >> 3 == 0b11110
        else 0
    )
    try:
        return ord(text[at : at + size].decode()), size
    except (UnicodeDecodeError, TypeError, ValueError):
        return -1, 1
