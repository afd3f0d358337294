"""Kernels that read one logfmt key from a whole column of lines (the hinted logfmt path).

A key's value is that of its last token with a non-empty value. One full-line RE2 pass costs
~1.7 ns a byte and every RE2 call ~65 ns a row, while a capture at the end of a long match
costs far more (RE2 tracks submatches across the prefix), so a key is read with:

1. `up_to_token_pattern(key)`, removed with `replace_substring_regex` (no capture: RE2's DFA
   finds where the match ends and stops there): the leading pairs the decoder steps over one
   by one, up to the first whitespace-led (or line-leading) `key=` it reaches as a token. The
   pairs may be anything the decoder reads without an error that moves it (keys without
   U+FFFD, quoted values with escapes, bare values), separated by whitespace. What is left of
   such a line starts with the token's value.
2. `VALUE_AT_START`, an anchored capture that RE2 answers with its one-pass matcher: the value,
   bare and followed by a separator or the end, or quoted without escapes; not empty and
   without U+FFFD (the decoder would drop it).
3. Lines whose remainder holds no other token that could carry the key (`later_token_rows`:
   no occurrence of `needle(key)` at all, found with one substring search over the block's
   buffer, or none that starts a `...=value` token) have their value: no later token replaces it.

A line with no `key=` token reached this way and without the needle anywhere has no value. The
rest (a malformed pair before the key, an empty or escaped value, a later occurrence) go to the
exact kernels of logfmt_parser or the scanner.
"""

from __future__ import annotations

import ctypes
import functools
import re
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from svclog.libc import libc_function

_WS = r"\x00-\x20"  # the decoder's separators (a class body)
# A pair the decoder reads without an error and leaves right after: a key without U+FFFD (the
# decoder skips to the next space after such a key), then a quoted value (escapes only change
# its text) or a bare one; whitespace must follow it in the pattern.
_PAIR = rf'[^{_WS}="\x{{FFFD}}]+(?:=(?:"(?:[^"\\]|\\(?s:.))*"|[^{_WS}="]*))?'
# The value at the start of a line's remainder: quoted (no escapes) or bare and then a separator
VALUE_AT_START = rf'^(?:"(?P<quoted>[^"\\\x{{FFFD}}]+)"|(?P<bare>[^{_WS}="\x{{FFFD}}]+)(?:[{_WS}]|$))'
_ALNUM_RUN = re.compile(r"[A-Za-z0-9]+")


@functools.lru_cache(maxsize=256)  # built once per key, used per block
def up_to_token_pattern(key: str) -> str:
    """The line up to and including the first `key=` the decoder reaches as a token (lazy: the
    first one, so RE2 stops there)."""
    return rf"^[{_WS}]*(?:{_PAIR}[{_WS}]+)*?{re.escape(key)}="


def needle(key: str) -> str | None:
    """A substring every raw key that sanitises to `key` contains: its longest run of letters
    and digits (sanitising maps every other character to `_`, one for one, and may add a
    leading `_`); None for a key of underscores only."""
    runs = _ALNUM_RUN.findall(key)
    return max(runs, key=len) if runs else None


@functools.lru_cache(maxsize=256)
def _token_with(needle_text: str) -> str:
    # a word holding the needle that starts a token (after a separator, a closing quote or at the
    # start) and has a non-empty value: what a later token that could carry the key looks like
    word = rf'[^{_WS}="]*'
    return rf'(?:^|[{_WS}"]){word}{re.escape(needle_text)}{word}=[^{_WS}]'


def later_token_rows(text: pa.Array, needle_text: str, rows_limit: int = 64) -> np.ndarray:
    """Rows of `text` that may hold a token whose key sanitises to the needle's key (a bool mask).

    One substring search over the block's buffer finds the rows holding the needle at all
    (none, nearly always); beyond `rows_limit` of them a vectorised search takes the rest."""
    n = len(text)
    hits = np.zeros(n, dtype=bool)
    if n == 0:
        return hits
    offsets = value_offsets(text)
    data_buffer = text.buffers()[2]
    if data_buffer is None:
        return hits
    lo, hi = int(offsets[0]), int(offsets[-1])
    data = Haystack(data_buffer)
    target = needle_text.encode()
    pos = data.find(target, lo, hi)
    found = 0
    while pos >= 0:
        row = int(np.searchsorted(offsets, pos, side="right")) - 1
        hits[row] = True
        found += 1
        if found > rows_limit:  # a common needle: the remaining rows in one vectorised pass
            tail = text.slice(row + 1)
            hits[row + 1 :] = pc.fill_null(pc.match_substring(tail, needle_text), False).to_numpy(zero_copy_only=False)
            break
        pos = data.find(target, int(offsets[row + 1]), hi)
    if text.null_count:
        hits &= text.is_valid().to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(hits)
    if len(rows):
        token = pc.fill_null(pc.match_substring_regex(text.take(rows), _token_with(needle_text)), False)
        hits[rows] = token.to_numpy(zero_copy_only=False)
    return hits


_MEMMEM = libc_function("memmem", [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t], ctypes.c_void_p)


class Haystack:
    """Substring search in an Arrow buffer: the C library's memmem on the buffer's own memory
    (no copy, and ctypes releases the GIL around the call; 2.7 ms for the remainders of 400k bench
    lines against 9.9 ms for a copy and bytes.find under the GIL), else bytes.find on one copy."""

    def __init__(self, buffer: pa.Buffer, memmem: Callable[[int, int, bytes, int], int | None] | None = _MEMMEM):
        self.buffer = buffer
        self.memmem = memmem
        self._copy: bytes | None = None

    def find(self, needle: bytes, start: int, end: int) -> int:
        """The first position of `needle` within [start, end) (0 <= start), or -1."""
        end = min(end, self.buffer.size)
        if self.memmem is None:
            if self._copy is None:
                self._copy = self.buffer.to_pybytes()
            return self._copy.find(needle, start, end)
        if end - start < len(needle):
            return -1
        hit = self.memmem(self.buffer.address + start, end - start, needle, len(needle))
        return -1 if hit is None else hit - self.buffer.address


def value_offsets(text: pa.Array) -> np.ndarray:
    """The string array's n + 1 offsets into its data buffer, as int64."""
    dtype = np.int64 if pa.types.is_large_string(text.type) else np.int32
    raw = np.frombuffer(text.buffers()[1], dtype=dtype)
    return raw[text.offset : text.offset + len(text) + 1].astype(np.int64)


def read_key(line: pa.Array, key: str) -> tuple[pa.Array, np.ndarray]:
    """(values, decided): `key`'s value per line where these kernels can tell (null: the line
    has none); `decided` is false on the rows left to the exact kernels."""
    n = len(line)
    if isinstance(line, pa.ChunkedArray):
        line = line.combine_chunks()
    if not (pa.types.is_string(line.type) or pa.types.is_large_string(line.type)):
        line = line.cast(pa.string())
    target = needle(key)
    if target is None or n == 0:
        return pa.nulls(n, pa.string()), np.zeros(n, dtype=bool)
    rest = pc.replace_substring_regex(line, up_to_token_pattern(key), "")
    reached = np.diff(value_offsets(rest)) < np.diff(value_offsets(line))  # a match removes `key=`
    found = pc.extract_regex(rest, VALUE_AT_START)
    quoted, bare = pc.struct_field(found, "quoted"), pc.struct_field(found, "bare")
    value = pc.if_else(pc.fill_null(pc.not_equal(quoted, ""), False), quoted, bare)
    has_value = reached & value.is_valid().to_numpy(zero_copy_only=False)
    later = later_token_rows(rest, target)
    decided = (has_value | ~reached) & ~later
    values = pc.if_else(pa.array(has_value & decided), value, pa.scalar(None, value.type))
    return values, decided
