"""A large query answer encoded off the event loop, in pieces.

`json.dumps` is C code that holds the GIL for its whole run: a 40000-line answer (~4 MB) held
the gateway's event loop, and every other tenant's request it serves, for tens of
milliseconds per answer. Encoded on a worker thread, list by list in batches, the GIL changes
hands between batches, so the loop waits at most about one batch. The bytes are the same as
one `json.dumps` call makes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

BATCH = 1000  # list items encoded per dumps call (~100 KB of log lines)
LARGE = 5000  # answers with fewer entries or points than this are encoded inline


def dumps(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def _pieces(data: Any) -> Iterator[bytes]:
    if isinstance(data, dict):
        yield b"{"
        for i, (key, value) in enumerate(data.items()):
            yield (b"," if i else b"") + dumps(str(key)) + b":"
            yield from _pieces(value)
        yield b"}"
    elif isinstance(data, list) and len(data) > BATCH:
        yield b"["
        for start in range(0, len(data), BATCH):
            yield (b"," if start else b"") + dumps(data[start : start + BATCH])[1:-1]
        yield b"]"
    elif isinstance(data, list) and any(
        isinstance(item, dict) or (isinstance(item, list) and len(item) > BATCH) for item in data
    ):
        yield b"["  # a short list of streams or series: each may hold a long list
        for i, item in enumerate(data):
            if i:
                yield b","
            yield from _pieces(item)
        yield b"]"
    else:
        yield dumps(data)


def dumps_in_pieces(data: Any) -> bytes:
    """The bytes of `dumps(data)`, made list batch by list batch."""
    return b"".join(_pieces(data))


def entries(data: dict) -> int:
    """Log entries or sample points in a query answer's `result` (0 for other answers)."""
    result = data.get("result")
    if not isinstance(result, list):
        return 0
    return sum(len(item.get("values") or ()) for item in result if isinstance(item, dict))


async def encode(payload: dict, data: dict) -> bytes:
    """`payload` as JSON; on a worker thread in pieces when `data` (its query answer) is large."""
    if entries(data) < LARGE:
        return dumps(payload)
    return await asyncio.to_thread(dumps_in_pieces, payload)
