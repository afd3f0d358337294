"""The JSON body of query, metadata and pattern answers, made by orjson.

orjson makes a document ~15x faster than the standard encoder, UTF-8 as is (no `\\u` escapes
beyond control characters), with its compact separators; floats may print shorter (`1e-5` for
`1e-05`), the same numbers. But one orjson call holds the GIL from start to end: a 100000-line
answer (~21 MB) is ~22 ms, in the gateway's event loop, during which no other tenant's request
moves (the issue-16 scenario's four concurrent 100000-line selects took the light tenant's p99
from 9 to ~70 ms). An answer of more than `STREAM_ABOVE` list entries therefore goes out in
pieces of about `PIECE_ENTRIES` entries (~0.2 ms each), made as the client takes them, with the
event loop free between pieces; the bytes are the same as one call's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import orjson
from starlette.responses import Response, StreamingResponse

from svclog.logql.engine.json_codec import EncodedValues

# one piece: about this many list entries (~0.2 ms of orjson for 200-byte log lines)
PIECE_ENTRIES = 1000
# a document lighter than this goes out in one call, with a Content-Length (~2 ms at most)
STREAM_ABOVE = 10_000
MEDIA_TYPE = "application/json"


def dumps(data: Any) -> bytes:
    return orjson.dumps(data, default=_encoded, option=orjson.OPT_NON_STR_KEYS)


def _encoded(value: Any) -> orjson.Fragment:
    if isinstance(value, EncodedValues):
        return orjson.Fragment(value.text())
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def response(data: Any, status: int = 200, give_way: Callable[[], Awaitable[None]] | None = None) -> Response:
    """`data` as a JSON response: in one piece when light, else streamed in pieces, calling
    `give_way()` between two (a large answer's sending waits for small queries in flight)."""
    if not heavier_than(data, STREAM_ABOVE):
        return Response(dumps(data), status_code=status, media_type=MEDIA_TYPE)
    return StreamingResponse(_streamed(data, give_way), status_code=status, media_type=MEDIA_TYPE)


async def _streamed(data: Any, give_way: Callable[[], Awaitable[None]] | None) -> AsyncIterator[bytes]:
    for piece in pieces(data):
        yield piece
        await asyncio.sleep(0)  # the loop's other requests go between two pieces
        if give_way is not None:
            await give_way()


def heavier_than(data: Any, limit: int) -> bool:
    """Whether `data` holds more than `limit` entries: list items (a stream's values, a matrix
    row's points), objects and scalars, counted until the limit is passed."""
    return _weight(data, limit) > limit


def _weight(data: Any, limit: int) -> int:
    """`data`'s entries, or any count past `limit` once it is passed (a huge vector stops early)."""
    if isinstance(data, dict):
        total = 1
        for value in data.values():
            total += _weight(value, limit - total)
            if total > limit:
                break
        return total
    if isinstance(data, EncodedValues):
        return max(1, data.count)
    if isinstance(data, list):
        if not data or not isinstance(data[0], dict):
            return max(1, len(data))  # values, points, names: flat entries
        total = 0
        for item in data:
            total += _weight(item, limit - total)
            if total > limit:
                break
        return total
    return 1


def pieces(data: Any, per_piece: int = PIECE_ENTRIES) -> Iterator[bytes]:
    """`dumps(data)` as consecutive pieces, none of more than about `per_piece` entries."""
    if not heavier_than(data, per_piece):
        yield dumps(data)
    elif isinstance(data, EncodedValues):  # its parts as they are (VALUES_SLICE entries each)
        yield b"["
        for at, part in enumerate(data.parts):
            yield part if at == 0 else b"," + part
        yield b"]"
    elif isinstance(data, dict):
        separator = b"{"
        for key, value in data.items():
            yield separator + _key(key)
            separator = b","
            yield from pieces(value, per_piece)
        yield b"}"
    elif isinstance(data[0], dict):
        yield from _objects(data, per_piece)
    else:
        yield b"["
        for at in range(0, len(data), per_piece):
            inner = dumps(data[at : at + per_piece])[1:-1]
            yield inner if at == 0 else b"," + inner
        yield b"]"


def _objects(items: list, per_piece: int) -> Iterator[bytes]:
    """A list of objects (streams, series, samples): light neighbours together in one call, a
    heavy one in pieces of its own."""
    yield b"["
    group: list = []
    weight, first = 0, True
    for item in items:
        heavy = _weight(item, per_piece)
        if group and (weight + heavy > per_piece or heavy > per_piece):
            yield (b"" if first else b",") + dumps(group)[1:-1]
            group, weight, first = [], 0, False
        if heavy > per_piece:
            if not first:
                yield b","
            yield from pieces(item, per_piece)
            first = False
        else:
            group.append(item)
            weight += heavy
    if group:
        yield (b"" if first else b",") + dumps(group)[1:-1]
    yield b"]"


def _key(key: Any) -> bytes:
    """An object key and its colon, as orjson writes it (non-string keys become strings)."""
    return dumps({key: 0})[1:-2]
