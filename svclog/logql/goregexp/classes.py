"""Go's rune classes for regexp/syntax: Unicode case folding and rune-range lists.

A class is a flat list [lo0, hi0, lo1, hi1, ...]; these follow Go's appendRange, cleanClass and
friends step by step, because the parser's later decisions (is it one rune? equal to another
class?) read the list as Go leaves it. Folding uses Python's Unicode tables (14.0 on 3.11):
runes added to Unicode after it fold as themselves.
"""

from __future__ import annotations

import functools

MAX_RUNE = 0x10FFFF
MIN_FOLD, MAX_FOLD = 0x41, 0x1E943  # Go's bounds of the runes that fold


@functools.cache
def _fold_orbits() -> dict[int, tuple[int, ...]]:
    """Runes that fold together (Go's SimpleFold orbits), keyed by each member."""
    groups: dict[str, list[int]] = {}
    for r in range(MIN_FOLD, MAX_FOLD + 1):
        if not 0xD800 <= r < 0xE000:
            groups.setdefault(chr(r).casefold(), []).append(r)
    return {r: tuple(group) for group in groups.values() if len(group) > 1 for r in group}


def simple_fold(r: int) -> int:
    """Go's unicode.SimpleFold: the next rune of r's orbit, wrapping around."""
    orbit = _fold_orbits().get(r)
    if orbit is None:
        return r
    bigger = [x for x in orbit if x > r]
    return min(bigger) if bigger else min(orbit)


def min_fold_rune(r: int) -> int:
    return min(_fold_orbits().get(r, (r,))) if MIN_FOLD <= r <= MAX_FOLD else r


def go_to_lower(r: int) -> int:
    """Go's unicode.ToLower (the simple mapping: U+0130 lowers to "i", not to Python's "i̇")."""
    if 0xD800 <= r < 0xE000:
        return r
    lower = chr(r).lower()
    return ord(lower) if len(lower) == 1 else (0x69 if r == 0x130 else r)


def append_range(r: list[int], lo: int, hi: int) -> list[int]:
    # widen the last or next-to-last range when lo-hi touches it, as Go's appendRange does
    n = len(r)
    for i in (2, 4):
        if n >= i:
            rlo, rhi = r[n - i], r[n - i + 1]
            if lo <= rhi + 1 and rlo <= hi + 1:
                r[n - i], r[n - i + 1] = min(lo, rlo), max(hi, rhi)
                return r
    r += [lo, hi]
    return r


def append_folded_range(r: list[int], lo: int, hi: int) -> list[int]:
    if (lo <= MIN_FOLD and hi >= MAX_FOLD) or hi < MIN_FOLD or lo > MAX_FOLD:
        return append_range(r, lo, hi)
    if lo < MIN_FOLD:
        append_range(r, lo, MIN_FOLD - 1)
        lo = MIN_FOLD
    if hi > MAX_FOLD:
        append_range(r, MAX_FOLD + 1, hi)
        hi = MAX_FOLD
    for c in range(lo, hi + 1):
        append_range(r, c, c)
        f = simple_fold(c)
        while f != c:
            append_range(r, f, f)
            f = simple_fold(f)
    return r


def append_class(r: list[int], x: list[int]) -> list[int]:
    for i in range(0, len(x), 2):
        append_range(r, x[i], x[i + 1])
    return r


def append_negated_class(r: list[int], x: list[int]) -> list[int]:
    next_lo = 0
    for i in range(0, len(x), 2):
        if next_lo <= x[i] - 1:
            append_range(r, next_lo, x[i] - 1)
        next_lo = x[i + 1] + 1
    if next_lo <= MAX_RUNE:
        append_range(r, next_lo, MAX_RUNE)
    return r


def clean_class(r: list[int]) -> list[int]:
    pairs = sorted(((r[i], r[i + 1]) for i in range(0, len(r), 2)), key=lambda p: (p[0], -p[1]))
    out: list[int] = []
    for lo, hi in pairs:
        if out and lo <= out[-1] + 1:
            out[-1] = max(out[-1], hi)
        else:
            out += [lo, hi]
    r[:] = out
    return r


def in_class(r: int, x: list[int]) -> bool:
    return any(x[i] <= r <= x[i + 1] for i in range(0, len(x), 2))


PERL_GROUPS = {
    "d": [0x30, 0x39],
    "s": [0x9, 0xA, 0xC, 0xD, 0x20, 0x20],
    "w": [0x30, 0x39, 0x41, 0x5A, 0x5F, 0x5F, 0x61, 0x7A],
}
POSIX_GROUPS = {
    "alnum": [0x30, 0x39, 0x41, 0x5A, 0x61, 0x7A],
    "alpha": [0x41, 0x5A, 0x61, 0x7A],
    "ascii": [0x0, 0x7F],
    "blank": [0x9, 0x9, 0x20, 0x20],
    "cntrl": [0x0, 0x1F, 0x7F, 0x7F],
    "digit": [0x30, 0x39],
    "graph": [0x21, 0x7E],
    "lower": [0x61, 0x7A],
    "print": [0x20, 0x7E],
    "punct": [0x21, 0x2F, 0x3A, 0x40, 0x5B, 0x60, 0x7B, 0x7E],
    "space": [0x9, 0xD, 0x20, 0x20],
    "upper": [0x41, 0x5A],
    "word": [0x30, 0x39, 0x41, 0x5A, 0x5F, 0x5F, 0x61, 0x7A],
    "xdigit": [0x30, 0x39, 0x41, 0x46, 0x61, 0x66],
}
# Unicode tables whose runes matter to a shape: single runes become literals, "Any" is all
SINGLE_RUNE_TABLES = {"Zl": 0x2028, "Zp": 0x2029}
TABLES_WITH_NEWLINE = {"C", "Cc", "Common", "Zyyy", "Any"}
