"""Decode and encode push request bodies (JSON, snappy protobuf, gzip/deflate).

decode_push turns any byte string into a list of PushStream or raises
ValidationError: malformed input of any kind, including compression bombs,
never escapes as another exception type. Semantic checks (label limits,
timestamps, line sizes) belong to svclog.distributor.validate, not here.
"""

from __future__ import annotations

import json
import re
import zlib
from typing import Any

import snappy
from google.protobuf.message import DecodeError

from svclog.distributor.validate import UnparsedLabels
from svclog.model import NS, Entry, Labels, PushStream, ValidationError, parse_rfc3339
from svclog.serve.codecs import push_pb2
from svclog.serve.codecs.label_parser import parse_labels

# What a decoder may raise on a malformed body it did not check for itself: a backstop so a
# client sees a 400 naming the body, never a 500 (the OTLP codec adds its JSON mapper's error).
MALFORMED_BODY_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    AttributeError,
    OverflowError,
    RecursionError,
    MemoryError,
    zlib.error,
    DecodeError,
)

JSON_CONTENT_TYPE = "application/json"
PROTOBUF_CONTENT_TYPE = "application/x-protobuf"

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_TS_STRING = re.compile(r"-?[0-9]{1,20}")
_SURROGATE = re.compile("[\ud800-\udfff]")
# RFC 2045 token characters, as Go's mime.ParseMediaType accepts them.
_TOKEN = re.compile(r"[!#$%&'*+\-.0-9A-Z^_`a-z|~]+")


class PushTooLargeError(ValidationError):
    """The decompressed body would exceed max_decompressed_bytes."""


# ---------------------------------------------------------------- decoding


def decode_push(
    body: bytes,
    content_type: str | None,
    content_encoding: str | None,
    *,
    max_decompressed_bytes: int,
) -> list[PushStream]:
    """Decode a push body the way the reference's HTTP push handler does."""
    try:
        media_type = _media_type(content_type)
        raw = _decode_content_encoding(bytes(body), content_encoding, max_decompressed_bytes)
        if media_type == JSON_CONTENT_TYPE:
            return _decode_json(raw)
        # Every other media type is snappy protobuf, as in the reference.
        return _decode_protobuf(raw, max_decompressed_bytes)
    except ValidationError:
        raise
    except MALFORMED_BODY_ERRORS as err:
        # Backstop for decoder edge cases; a client must see a 400, never a 500.
        raise ValidationError(f"invalid push request body: {err}") from None


def _media_type(content_type: str | None) -> str:
    """Validate and normalise a Content-Type like Go's mime.ParseMediaType."""
    base = (content_type or "").split(";", 1)[0].strip().lower()
    if not base:
        raise ValidationError("mime: no media type")
    major, slash, minor = base.partition("/")
    if not _TOKEN.fullmatch(major):
        raise ValidationError("mime: no media type")
    if slash and not _TOKEN.fullmatch(minor):
        raise ValidationError("mime: expected token after slash")
    return base


def _decode_content_encoding(body: bytes, encoding: str | None, limit: int) -> bytes:
    encoding = (encoding or "").strip().lower()
    if encoding in ("", "identity", "snappy"):
        # 'snappy' is the protobuf body's own compression; some clients also announce it here.
        if len(body) > limit:
            raise PushTooLargeError(f"push body larger than max ({len(body)} vs {limit} bytes)")
        return body
    if encoding == "gzip":
        return _inflate(body, zlib.MAX_WBITS | 16, limit, "gzip")
    if encoding == "deflate":
        # The reference reads raw DEFLATE; zlib-wrapped data (RFC 9110's 'deflate') is accepted too.
        wbits = zlib.MAX_WBITS if _looks_like_zlib(body) else -zlib.MAX_WBITS
        return _inflate(body, wbits, limit, "flate")
    raise ValidationError(f'Content-Encoding "{encoding}" not supported')


def _looks_like_zlib(body: bytes) -> bool:
    return len(body) >= 2 and body[0] & 0x0F == 8 and (body[0] << 8 | body[1]) % 31 == 0


def _inflate(body: bytes, wbits: int, limit: int, name: str) -> bytes:
    """Decompress with a hard output cap; gzip may hold several members back to back."""
    out = bytearray()
    data = body
    while True:
        inflater = zlib.decompressobj(wbits)
        try:
            # max_length bounds the allocation, so a bomb costs at most limit+1 bytes.
            out += inflater.decompress(data, limit + 1 - len(out))
        except zlib.error as err:
            raise ValidationError(f"{name}: invalid compressed body: {err}") from None
        if len(out) > limit:
            raise PushTooLargeError(f"decompressed push body larger than max ({limit} bytes)")
        if not inflater.eof:
            raise ValidationError(f"{name}: unexpected EOF")
        data = inflater.unused_data
        if wbits < 0 or not data:
            return bytes(out)


# ---------------------------------------------------------------- protobuf


def _decode_protobuf(raw: bytes, limit: int) -> list[PushStream]:
    declared = _snappy_declared_length(raw)
    if declared > limit:
        # The length preamble is checked before decompressing, so nothing is allocated.
        raise PushTooLargeError(f"received message larger than max ({declared} vs {limit})")
    try:
        plain = snappy.uncompress(raw)
    except Exception:  # noqa: BLE001 - the snappy backends raise assorted types
        raise ValidationError("snappy: corrupt input") from None
    request = push_pb2.PushRequest()
    try:
        request.ParseFromString(bytes(plain))
    except DecodeError as err:
        raise ValidationError(f"proto: cannot parse push request: {err}") from None
    return [_stream_from_proto(stream) for stream in request.streams]


def _snappy_declared_length(raw: bytes) -> int:
    """The uncompressed length a snappy block claims (a little-endian base-128 varint)."""
    value = 0
    for index in range(min(len(raw), 10)):
        byte = raw[index]
        value |= (byte & 0x7F) << (7 * index)
        if not byte & 0x80:
            return value
    raise ValidationError("snappy: corrupt input")


def _stream_labels(text: str | bytes) -> Labels:
    """Parsed labels, or UnparsedLabels carrying the error: like the reference, a stream whose
    labels do not parse is refused alone by validation while the other streams are stored."""
    try:
        return parse_labels(text)
    except ValidationError as err:
        return UnparsedLabels(str(err))


def _stream_from_proto(stream: push_pb2.StreamAdapter) -> PushStream:
    labels = _stream_labels(stream.labels)
    entries = []
    for entry in stream.entries:
        stamp = entry.timestamp
        if not 0 <= stamp.nanos < NS:
            raise ValidationError(f"timestamp: nanos {stamp.nanos} not in range [0, 1e9)")
        ts = stamp.seconds * NS + stamp.nanos
        if not _INT64_MIN <= ts <= _INT64_MAX:
            raise ValidationError(f"timestamp: seconds {stamp.seconds} out of range")
        metadata = tuple(
            (pair.name.decode("utf-8", "replace"), pair.value.decode("utf-8", "replace"))
            for pair in entry.structuredMetadata
        )
        # Lines are bytes on the wire; invalid UTF-8 becomes U+FFFD instead of failing the push.
        entries.append(Entry(ts, entry.line.decode("utf-8", "replace"), metadata))
    return PushStream(labels, entries)


# ---------------------------------------------------------------- JSON


def _reject_constant(name: str) -> Any:
    raise ValidationError(f"invalid JSON value {name}")


def _decode_json(raw: bytes) -> list[PushStream]:
    # Go's decoder replaces invalid UTF-8 with U+FFFD rather than failing.
    text = raw.decode("utf-8", "replace")
    try:
        document = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise ValidationError(f"invalid JSON push body: {err}") from None
    if not isinstance(document, dict):
        raise ValidationError("invalid JSON push body: expected an object")
    streams = document.get("streams")
    if streams is None:
        return []
    if not isinstance(streams, list):
        raise ValidationError("invalid JSON push body: 'streams' must be an array")
    return [_stream_from_json(stream) for stream in streams]


def _stream_from_json(stream: Any) -> PushStream:
    if not isinstance(stream, dict):
        raise ValidationError("invalid JSON push body: each stream must be an object")
    if "stream" not in stream and ("labels" in stream or "entries" in stream):
        return _legacy_stream_from_json(stream)
    labels = Labels(_string_map(stream.get("stream"), "stream labels").items())
    values = stream.get("values")
    if values is None:
        values = []
    if not isinstance(values, list):
        raise ValidationError("invalid JSON push body: 'values' must be an array")
    return PushStream(labels, [_entry_from_json(value) for value in values])


def _entry_from_json(value: Any) -> Entry:
    if not isinstance(value, list) or not 2 <= len(value) <= 3:
        raise ValidationError('invalid JSON push body: each value must be ["<ns timestamp>", "<line>", {metadata}?]')
    stamp, line = value[0], value[1]
    if not isinstance(stamp, str):
        raise ValidationError("invalid JSON push body: timestamp must be a string of nanoseconds, not a number")
    if not _TS_STRING.fullmatch(stamp) or not _INT64_MIN <= int(stamp) <= _INT64_MAX:
        raise ValidationError(f"invalid JSON push body: cannot parse timestamp {stamp!r}")
    if not isinstance(line, str):
        raise ValidationError("invalid JSON push body: log line must be a string")
    metadata: tuple[tuple[str, str], ...] = ()
    if len(value) == 3:
        metadata = tuple(_string_map(value[2], "structured metadata", required=True).items())
    return Entry(int(stamp), _clean(line), metadata)


def _legacy_stream_from_json(stream: dict) -> PushStream:
    """The deprecated /api/prom/push JSON: {"labels": "{...}", "entries": [{"ts", "line"}]}."""
    labels_text = stream.get("labels")
    if not isinstance(labels_text, str):
        raise ValidationError("invalid JSON push body: 'labels' must be a string")
    entries_json = stream.get("entries") or []
    if not isinstance(entries_json, list):
        raise ValidationError("invalid JSON push body: 'entries' must be an array")
    entries = []
    for item in entries_json:
        if not isinstance(item, dict):
            raise ValidationError("invalid JSON push body: each entry must be an object")
        stamp, line = item.get("ts", item.get("timestamp")), item.get("line", "")
        if not isinstance(stamp, str) or not isinstance(line, str):
            raise ValidationError("invalid JSON push body: entry 'ts' and 'line' must be strings")
        entries.append(Entry(parse_rfc3339(stamp), _clean(line)))
    return PushStream(_stream_labels(_clean(labels_text)), entries)


def _string_map(value: Any, what: str, *, required: bool = False) -> dict[str, str]:
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise ValidationError(f"invalid JSON push body: {what} must be an object")
    out = {}
    for key, item in value.items():
        if not isinstance(item, str):
            raise ValidationError(f"invalid JSON push body: {what} must map strings to strings; '{key}' does not")
        out[_clean(key)] = _clean(item)
    return out


def _clean(text: str) -> str:
    # A lone \ud800 escape cannot be encoded as UTF-8 later; Go turns it into U+FFFD.
    if _SURROGATE.search(text):
        return _SURROGATE.sub("\ufffd", text)
    return text


# ---------------------------------------------------------------- encoding


def encode_push_json(streams: list[PushStream]) -> bytes:
    payload = {
        "streams": [
            {
                "stream": stream.labels.to_dict(),
                "values": [
                    [str(e.ts), e.line, dict(e.metadata)] if e.metadata else [str(e.ts), e.line] for e in stream.entries
                ],
            }
            for stream in streams
        ]
    }
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def encode_push_protobuf(streams: list[PushStream]) -> bytes:
    """Snappy (block format) compressed PushRequest, as the reference clients send it."""
    request = push_pb2.PushRequest()
    for stream in streams:
        message = request.streams.add()
        message.labels = str(stream.labels).encode("utf-8")
        for entry in stream.entries:
            item = message.entries.add()
            seconds, nanos = divmod(entry.ts, NS)
            item.timestamp.seconds = seconds
            item.timestamp.nanos = nanos
            item.line = entry.line.encode("utf-8")
            for name, value in entry.metadata:
                pair = item.structuredMetadata.add()
                pair.name = name.encode("utf-8")
                pair.value = value.encode("utf-8")
    return bytes(snappy.compress(request.SerializeToString()))
