"""The `|>` filter used to check mined patterns: the LogQL stage when present, else a local
matcher written to the reference's semantics (first-occurrence literals, no empty captures)."""

from __future__ import annotations

import re

try:
    import pyarrow as pa

    from svclog.logql.stages.pattern_parser import pattern_line_mask
except ImportError:  # the stage is being written in parallel
    pattern_line_mask = None

_CAPTURE = re.compile(r"<[a-zA-Z_][a-zA-Z0-9_]*>")


def _fallback(pattern: str, line: str) -> bool:
    parts: list[tuple[bool, str]] = []
    pos = 0
    for m in _CAPTURE.finditer(pattern):
        if m.start() > pos:
            parts.append((False, pattern[pos : m.start()]))
        parts.append((True, m.group()))
        pos = m.end()
    if pos < len(pattern):
        parts.append((False, pattern[pos:]))
    if not line or not parts:
        return not line and not parts
    off = 0
    for i, (cap, literal) in enumerate(parts):
        if cap:
            continue
        j = line.find(literal, off)
        if j < 0 or (i != 0 and j == off):
            return False
        off = j + len(literal)
    return parts[-1][0] == (off != len(line))


def unmatched(pattern: str, lines: list[str]) -> list[str]:
    """Lines that `|> pattern` rejects."""
    if pattern_line_mask is not None:
        mask = pattern_line_mask(pa.array(lines, pa.string()), pattern).to_pylist()
        return [line for line, ok in zip(lines, mask) if not ok]
    return [line for line in lines if not _fallback(pattern, line)]
