"""Log lines as JSON string text, by Arrow's kernels: what orjson writes between the quotes.

orjson escapes a string's backslashes and quotes, writes \\b \\t \\n \\f \\r for those control
characters and \\u00XX for the other ones below 0x20, and leaves everything else (non-ASCII
included) as it is. Here the same is done column-wise, only on the lines that hold such a
character, with kernels that let the GIL go: a 100000-line answer's text no longer holds the
gateway's GIL for its Python string objects, tuples and orjson calls (~45 ms), in which a light
query's threads waited (docs/architecture.md, session 30).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_NEEDS_ESCAPE = r'[\x00-\x1f"\\]'
_NAMED = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def json_string_bodies(lines: pa.Array) -> pa.Array:
    """Each line as orjson writes it inside its quotes (a string array of the same length)."""
    needs = pc.match_substring_regex(lines, _NEEDS_ESCAPE)  # stops at a line's first such byte
    count = pc.sum(needs).as_py() or 0
    if not count:
        return lines
    # most lines need it (JSON logs: every one has quotes): all of them, not picked out and back
    every = count * 2 > len(lines)
    escaped = lines if every else lines.filter(needs)
    data = _bytes_of(escaped)
    # which escapes are needed at all, by numpy over the bytes at once: a kernel looking for a
    # byte a line lacks reads every line to its end, ~4x slower
    if (data == ord("\\")).any():
        escaped = pc.replace_substring(escaped, "\\", "\\\\")
    if (data == ord('"')).any():
        escaped = pc.replace_substring(escaped, '"', '\\"')
    for code in np.unique(data[data < 0x20]).tolist():  # control characters: rare in log lines
        char = chr(code)
        escaped = pc.replace_substring(escaped, char, _NAMED.get(char, f"\\u{code:04x}"))
    return escaped if every else pc.replace_with_mask(lines, needs, escaped)


def _bytes_of(lines: pa.Array) -> np.ndarray:
    """The lines' UTF-8 bytes, one after the other (a view of the array's data buffer)."""
    _, offsets, data = lines.buffers()
    if data is None or not len(lines):
        return np.empty(0, np.uint8)
    bounds = np.frombuffer(offsets, np.int32)[lines.offset : lines.offset + len(lines) + 1]
    return np.frombuffer(data, np.uint8)[bounds[0] : bounds[-1]]
