"""Fast path: JSON push bodies straight to column lists (StreamColumns).

The common body — streams whose values are all `["<ns>", "<line>"]` — is decoded with a
few C-level passes per stream (one regex over all timestamps, `map(int, ...)`, one
surrogate scan over all lines) instead of an object per entry. Anything else (metadata,
legacy shapes, odd values, protobuf) goes through `decode_push`, which owns every error
message; so both paths accept and reject exactly the same bodies.
"""

from __future__ import annotations

import re

import orjson

from svclog.model import Labels, PushStream, StreamColumns
from svclog.serve.codecs.push import _decode_content_encoding, _media_type, decode_push

_TIMESTAMPS = re.compile(r"(?:-?[0-9]{1,19}\n)*-?[0-9]{1,19}")
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def to_columns(streams: list[PushStream]) -> list[StreamColumns]:
    return [StreamColumns.from_push(s) for s in streams]


def decode_push_columns(
    body: bytes, content_type: str | None, content_encoding: str | None, *, max_decompressed_bytes: int
) -> list[StreamColumns]:
    if _media_type(content_type) != "application/json":
        return to_columns(
            decode_push(body, content_type, content_encoding, max_decompressed_bytes=max_decompressed_bytes)
        )
    raw = _decode_content_encoding(body, content_encoding, max_decompressed_bytes)
    try:
        # orjson: ~2.5x the standard decoder on push bodies. It refuses what the fast path
        # must not guess about (invalid UTF-8, lone surrogates, NaN, 65-bit numbers), and
        # those bodies go to the general decoder below.
        document = orjson.loads(raw)
    except orjson.JSONDecodeError:
        document = None
    streams = _fast_streams(document)
    if streams is None:  # unusual body: the general decoder decides (and words any error)
        return to_columns(decode_push(raw, content_type, None, max_decompressed_bytes=max_decompressed_bytes))
    return streams


def _fast_streams(document) -> list[StreamColumns] | None:
    if not isinstance(document, dict) or not isinstance(document.get("streams"), list):
        return None
    out = []
    for stream in document["streams"]:
        columns = _fast_stream(stream)
        if columns is None:
            return None
        out.append(columns)
    return out


def _fast_stream(stream) -> StreamColumns | None:
    if not isinstance(stream, dict) or set(stream) - {"stream", "values"}:
        return None
    labels, values = stream.get("stream"), stream.get("values")
    if not isinstance(labels, dict) or not isinstance(values, list) or not values:
        return None
    # type and length checks as C-level passes (map/set), not a Python test per entry
    if _types(labels) != {str} or _types(labels.values()) != {str}:
        return None
    if _types(values) != {list} or set(map(len, values)) != {2}:
        return None
    stamps, lines = zip(*values)
    if _types(stamps) != {str} or _types(lines) != {str}:
        return None
    if not _TIMESTAMPS.fullmatch("\n".join(stamps)):
        return None
    ts = list(map(int, stamps))
    if min(ts) < _INT64_MIN or max(ts) > _INT64_MAX:
        return None
    # no lone-surrogate scan: orjson refuses such strings, so they never get here
    return StreamColumns(Labels(labels.items()), ts, list(lines), None)


def _types(items) -> set:
    return set(map(type, items))
