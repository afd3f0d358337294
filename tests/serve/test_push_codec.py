"""Push body decoding/encoding: formats, compression, the wire layout, and hostile input."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
import snappy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from svclog.distributor.validate import UnparsedLabels
from svclog.model import Entry, Labels, PushStream, ValidationError
from svclog.serve.codecs import push_pb2
from svclog.serve.codecs.label_parser import parse_labels
from svclog.serve.codecs.push import (
    PushTooLargeError,
    decode_push,
    encode_push_json,
    encode_push_protobuf,
)

REPO = Path(__file__).resolve().parents[2]
CASES = Path("/work/shared/conformance/cases")  # where the other conformance-reading tests find them
LIMIT = 1 << 20
JSON = "application/json"
PROTO = "application/x-protobuf"


def decode(
    body: bytes, content_type: str | None = JSON, encoding: str | None = None, limit: int = LIMIT
) -> list[PushStream]:
    return decode_push(body, content_type, encoding, max_decompressed_bytes=limit)


def sample_streams() -> list[PushStream]:
    return [
        PushStream(
            Labels.from_dict({"app": "api", "env": 'q"uo\\te\n'}),
            [
                Entry(1_793_494_800_000_000_000, "hello ünïcødé ✓"),
                Entry(1_793_494_800_000_000_001, "", (("trace_id", "abc"), ("customer_id", "42"))),
                Entry(-5, "before the epoch"),
            ],
        ),
        PushStream(Labels.from_dict({"app": "web"}), [Entry(7, "x" * 1000)]),
    ]


# ---------------------------------------------------------------- round trips


def test_json_round_trip():
    streams = sample_streams()
    assert decode(encode_push_json(streams)) == streams


def test_protobuf_round_trip():
    streams = sample_streams()
    assert decode(encode_push_protobuf(streams), PROTO) == streams


def test_protobuf_built_with_generated_class():
    request = push_pb2.PushRequest()
    stream = request.streams.add(labels=b'{job="a", le="0.5"}')
    entry = stream.entries.add(line="zürich".encode())
    entry.timestamp.seconds, entry.timestamp.nanos = 1_700_000_000, 123
    entry.structuredMetadata.add(name=b"k", value=b"v")
    body = snappy.compress(request.SerializeToString())
    assert decode(body, PROTO) == [
        PushStream(
            Labels.from_dict({"job": "a", "le": "0.5"}),
            [Entry(1_700_000_000_000_000_123, "zürich", (("k", "v"),))],
        )
    ]


# Hand-assembled PushRequest: one stream `{app="x"}` with one entry at 1s+5ns, line "hi",
# structured metadata k=v. Tags: 0x0a = field 1 LEN, 0x12 = field 2 LEN, 0x1a = field 3 LEN,
# 0x08 / 0x10 = fields 1 / 2 VARINT (Timestamp.seconds / .nanos).
WIRE_FIXTURE = bytes(
    [
        0x0A,
        31,  # PushRequest.streams, 31 bytes
        0x0A,
        9,
        *b'{app="x"}',  #   StreamAdapter.labels
        0x12,
        18,  #   StreamAdapter.entries, 18 bytes
        0x0A,
        4,
        0x08,
        0x01,
        0x10,
        0x05,  #     EntryAdapter.timestamp {seconds: 1, nanos: 5}
        0x12,
        2,
        *b"hi",  #     EntryAdapter.line
        0x1A,
        6,
        0x0A,
        1,
        *b"k",
        0x12,
        1,
        *b"v",  #     EntryAdapter.structuredMetadata {name, value}
    ]
)
FIXTURE_STREAMS = [PushStream(Labels.from_dict({"app": "x"}), [Entry(1_000_000_005, "hi", (("k", "v"),))])]


def test_wire_fixture_decodes():
    assert decode(snappy.compress(WIRE_FIXTURE), PROTO) == FIXTURE_STREAMS


def test_encoder_produces_the_wire_fixture():
    assert snappy.uncompress(encode_push_protobuf(FIXTURE_STREAMS)) == WIRE_FIXTURE


def test_snappy_is_block_format_not_framed():
    body = encode_push_protobuf(FIXTURE_STREAMS)
    assert body[0] == len(WIRE_FIXTURE)  # block format starts with the varint length
    assert not body.startswith(b"\xff\x06\x00\x00sNaPpY")


def test_structured_metadata_is_optional_third_value():
    body = b'{"streams":[{"stream":{"a":"b"},"values":[["1","l1"],["2","l2",{"x":"y"}],["3","l3",{}]]}]}'
    [stream] = decode(body)
    assert stream.entries == [Entry(1, "l1"), Entry(2, "l2", (("x", "y"),)), Entry(3, "l3")]


def test_empty_request_and_null_fields():
    assert decode(b"{}") == []
    assert decode(b'{"streams":null}') == []
    assert decode(b'{"streams":[{"stream":{"a":"b"},"values":null}]}') == [PushStream(Labels.from_dict({"a": "b"}), [])]
    assert decode(encode_push_protobuf([]), PROTO) == []


def test_legacy_json_format():
    body = b'{"streams":[{"labels":"{app=\\"old\\"}","entries":[{"ts":"2026-11-01T00:00:01.5Z","line":"l"}]}]}'
    assert decode(body) == [PushStream(Labels.from_dict({"app": "old"}), [Entry(1_793_491_201_500_000_000, "l")])]


def test_content_type_parameters_and_case():
    body = encode_push_json(FIXTURE_STREAMS)
    assert decode(body, "Application/JSON; charset=utf-8") == FIXTURE_STREAMS
    # Any media type other than JSON means snappy protobuf, as in the reference.
    assert decode(encode_push_protobuf(FIXTURE_STREAMS), "application/octet-stream") == FIXTURE_STREAMS


def test_invalid_utf8_line_is_replaced_not_rejected():
    request = push_pb2.PushRequest()
    stream = request.streams.add(labels=b'{a="b"}')
    stream.entries.add(line=b"bad \xff byte")
    [decoded] = decode(snappy.compress(request.SerializeToString()), PROTO)
    assert decoded.entries[0].line == "bad \ufffd byte"
    [decoded] = decode(b'{"streams":[{"stream":{"a":"b"},"values":[["1","bad \xff \\ud800"]]}]}')
    assert decoded.entries[0].line == "bad \ufffd \ufffd"


# ---------------------------------------------------------------- compression


def test_gzip_json_and_gzip_protobuf():
    streams = sample_streams()
    assert decode(gzip.compress(encode_push_json(streams)), JSON, "gzip") == streams
    assert decode(gzip.compress(encode_push_protobuf(streams)), PROTO, "gzip") == streams


def test_gzip_multiple_members():
    body = encode_push_json(FIXTURE_STREAMS)
    assert decode(gzip.compress(body[:10]) + gzip.compress(body[10:]), JSON, "gzip") == FIXTURE_STREAMS


def test_deflate_raw_and_zlib_wrapped():
    body = encode_push_json(FIXTURE_STREAMS)
    raw = zlib.compressobj(wbits=-15)
    assert decode(raw.compress(body) + raw.flush(), JSON, "deflate") == FIXTURE_STREAMS
    assert decode(zlib.compress(body), JSON, "deflate") == FIXTURE_STREAMS


def test_snappy_content_encoding_is_accepted():
    assert decode(encode_push_protobuf(FIXTURE_STREAMS), PROTO, "snappy") == FIXTURE_STREAMS


def test_gzip_bomb_is_capped():
    bomb = gzip.compress(b"0" * 5_000_000)
    with pytest.raises(PushTooLargeError, match="larger than max"):
        decode(bomb, JSON, "gzip", limit=10_000)
    with pytest.raises(PushTooLargeError):
        decode(gzip.compress(b"a" * 10) * 2000, JSON, "gzip", limit=10_000)  # many members


def test_plain_body_over_the_limit_is_rejected():
    with pytest.raises(PushTooLargeError):
        decode(encode_push_json(sample_streams()), JSON, limit=100)


def test_snappy_header_claiming_huge_size_is_rejected_before_allocating():
    huge_claim = bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F]) + b"\x00" * 8  # claims 4 GiB
    with pytest.raises(PushTooLargeError, match="larger than max"):
        decode(huge_claim, PROTO)
    body = encode_push_protobuf(sample_streams())
    with pytest.raises(PushTooLargeError):
        decode(body, PROTO, limit=100)


# ---------------------------------------------------------------- errors


def conformance_body(name: str) -> bytes:
    case = json.loads((CASES / "errors" / f"{name}.json").read_text())
    return case["body"].encode()


@pytest.mark.parametrize(
    "name, message",
    [
        ("push_malformed_json", "invalid JSON"),
        ("push_numeric_timestamp", "timestamp must be a string"),
        ("push_nested_structured_metadata", "structured metadata must map strings to strings"),
    ],
)
def test_conformance_error_bodies(name, message):
    if not CASES.exists():
        pytest.skip("shared conformance cases not available")
    with pytest.raises(ValidationError, match=message):
        decode(conformance_body(name))


@pytest.mark.parametrize(
    "body, message",
    [
        (b"", "invalid JSON"),
        (b"[]", "expected an object"),
        (b'{"streams":{}}', "'streams' must be an array"),
        (b'{"streams":[1]}', "each stream must be an object"),
        (b'{"streams":[{"stream":{"a":1},"values":[]}]}', "stream labels must map strings to strings"),
        (b'{"streams":[{"stream":[],"values":[]}]}', "stream labels must be an object"),
        (b'{"streams":[{"stream":{"a":"b"},"values":{}}]}', "'values' must be an array"),
        (b'{"streams":[{"stream":{"a":"b"},"values":[["1"]]}]}', "each value must be"),
        (b'{"streams":[{"stream":{"a":"b"},"values":[["1","l",{},"x"]]}]}', "each value must be"),
        (b'{"streams":[{"stream":{"a":"b"},"values":[["1.5","l"]]}]}', "cannot parse timestamp"),
        (b'{"streams":[{"stream":{"a":"b"},"values":[["+1","l"]]}]}', "cannot parse timestamp"),
        (b'{"streams":[{"stream":{"a":"b"},"values":[["99999999999999999999","l"]]}]}', "cannot parse timestamp"),
        (b'{"streams":[{"stream":{"a":"b"},"values":[["1",5]]}]}', "log line must be a string"),
        (b'{"streams":[{"stream":{"a":"b"},"values":[["1","l",null]]}]}', "structured metadata must be an object"),
        (b'{"streams":[{"stream":{"a":"b"},"values":[["1","l",["k","v"]]]}]}', "structured metadata must be an object"),
        (b'{"streams":NaN}', "invalid JSON value NaN"),
        (b"[" * 100_000, "invalid"),
    ],
)
def test_json_errors(body, message):
    with pytest.raises(ValidationError, match=message):
        decode(body)


def proto_body(mutate) -> bytes:
    request = push_pb2.PushRequest()
    stream = request.streams.add(labels=b'{a="b"}')
    entry = stream.entries.add(line=b"l")
    mutate(stream, entry)
    return snappy.compress(request.SerializeToString())


@pytest.mark.parametrize(
    "body, message",
    [
        (b"", "snappy: corrupt input"),
        (b"\x05garbage", "snappy: corrupt input"),
        (b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80", "snappy: corrupt input"),
        (snappy.compress(b"\x0a\xff\x01"), "proto: cannot parse"),
        (snappy.compress(b"\x0f"), "proto: cannot parse"),
        (proto_body(lambda s, e: setattr(e.timestamp, "nanos", -1)), "nanos -1 not in range"),
        (proto_body(lambda s, e: setattr(e.timestamp, "nanos", 1_000_000_000)), "not in range"),
        (proto_body(lambda s, e: setattr(e.timestamp, "seconds", 10**11)), "out of range"),
    ],
)
def test_protobuf_errors(body, message):
    with pytest.raises(ValidationError, match=message):
        decode(body, PROTO)


@pytest.mark.parametrize(
    "body, message",
    [
        (proto_body(lambda s, e: setattr(s, "labels", b'{a="\xff"}')), "invalid UTF-8"),
        (proto_body(lambda s, e: setattr(s, "labels", b"a=b")), "Error parsing labels 'a=b'"),
        (proto_body(lambda s, e: setattr(s, "labels", b'{a="1",a="2"}')), "duplicate label name: 'a'"),
    ],
)
def test_protobuf_label_errors_keep_the_stream_for_validation(body, message):
    """A bad label string fails its stream alone (in validation), not the decode of the batch."""
    (stream,) = decode(body, PROTO)
    assert isinstance(stream.labels, UnparsedLabels) and message in stream.labels.error
    assert len(stream.entries) == 1


@pytest.mark.parametrize(
    "content_type, encoding, message",
    [
        (None, None, "mime: no media type"),
        ("", None, "mime: no media type"),
        ("application/", None, "expected token after slash"),
        ("a b", None, "no media type"),
        (JSON, "br", 'Content-Encoding "br" not supported'),
        (JSON, "gzip", "gzip: "),
        (JSON, "deflate", "flate: "),
    ],
)
def test_header_errors(content_type, encoding, message):
    with pytest.raises(ValidationError, match=message):
        decode(b"not compressed {}", content_type, encoding)


def test_truncated_gzip():
    body = gzip.compress(encode_push_json(FIXTURE_STREAMS))
    with pytest.raises(ValidationError, match="gzip: unexpected EOF"):
        decode(body[:-10], JSON, "gzip")


# ---------------------------------------------------------------- label strings


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{a="b", c="d"}', {"a": "b", "c": "d"}),
        ("{ a = 'b' ,c=`x\\ny`, }", {"a": "b", "c": "x\\ny"}),
        ("{}", {}),
        (' \n{a="b"}\t', {"a": "b"}),
        ('{a="", b="x"}', {"b": "x"}),
        ('{__tenant_id__="t", _x="1"}', {"__tenant_id__": "t", "_x": "1"}),
        (r'{a="q\"\\\n\t\x41\101\u00e9\U0001F600"}', {"a": 'q"\\\n\tAAé😀'}),
        (r'{a="\xc3\xa9"}', {"a": "é"}),
        ('{a="😀 ünï"}', {"a": "😀 ünï"}),
    ],
)
def test_parse_labels(text, expected):
    assert parse_labels(text) == Labels.from_dict(expected)
    assert parse_labels(text.encode()) == Labels.from_dict(expected)


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "1:1: parse error: unexpected end of input, expected '{'"),
        ("{a=b}", "1:4: parse error: unexpected character 'b', expected quoted label value"),
        ('{a="b"', "unexpected end of input, expected ',' or '}'"),
        ('{a="b}', "unterminated quoted string"),
        ('{a=~"b"}', "expected '='"),
        ('{1a="b"}', "expected label name"),
        ('{a.b="c"}', "expected '='"),
        ('{a="b"} x', "expected end of input"),
        ('{a="b"\n,\n b}', "3:3: parse error"),
        (r'{a="\q"}', "unknown escape sequence"),
        (r'{a="\xff"}', "invalid UTF-8 in label value"),
        (r'{a="\ud800"}', "invalid Unicode code point"),
        (r'{a="\777"}', "octal escape value > 255"),
        ('{a="x\ny"}', "unterminated quoted string"),
    ],
)
def test_parse_labels_errors(text, message):
    with pytest.raises(ValidationError, match="Error parsing labels") as info:
        parse_labels(text)
    assert message in str(info.value)


def test_parse_labels_duplicate_names():
    with pytest.raises(ValidationError, match="has duplicate label name: 'a'"):
        parse_labels('{a="1", b="2", a="3"}')


# ---------------------------------------------------------------- hostile input

HEADERS = st.sampled_from(
    [
        (JSON, None),
        (JSON, "gzip"),
        (JSON, "deflate"),
        (PROTO, None),
        (PROTO, "gzip"),
        (PROTO, "snappy"),
        (None, None),
        ("text/plain", "br"),
        (PROTO, "deflate"),
    ]
)


def assert_only_validation_errors(body: bytes, headers: tuple[str | None, str | None]) -> None:
    try:
        decode(body, headers[0], headers[1], limit=64 * 1024)
    except ValidationError:
        pass


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.binary(max_size=512), headers=HEADERS)
def test_random_bytes_raise_only_validation_errors(body, headers):
    assert_only_validation_errors(body, headers)


VALID_BODIES = {
    "json": encode_push_json(sample_streams()),
    "proto": snappy.uncompress(encode_push_protobuf(sample_streams())),
    "legacy": b'{"streams":[{"labels":"{a=\\"b\\"}","entries":[{"ts":"2026-11-01T00:00:00Z","line":"l"}]}]}',
}


@st.composite
def mutated(draw, source: bytes) -> bytes:
    data = bytearray(source)
    for _ in range(draw(st.integers(1, 8))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[pos] = draw(st.integers(0, 255))
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete" and data:
            del data[pos : pos + draw(st.integers(1, 8))]
        elif op == "truncate":
            del data[pos:]
    return bytes(data)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(sorted(VALID_BODIES)),
    data=st.data(),
    wrap=st.sampled_from(["plain", "snappy_after", "gzip_after", "mutate_compressed"]),
)
def test_mutated_valid_bodies_raise_only_validation_errors(kind, data, wrap):
    body = data.draw(mutated(VALID_BODIES[kind]))
    content_type = PROTO if kind == "proto" else JSON
    encoding = None
    if kind == "proto" or wrap == "snappy_after":
        body = snappy.compress(body)
    if wrap == "gzip_after":
        body, encoding = gzip.compress(body), "gzip"
    if wrap == "mutate_compressed":
        body = data.draw(
            mutated(snappy.compress(VALID_BODIES[kind]) if kind == "proto" else gzip.compress(VALID_BODIES[kind]))
        )
        encoding = None if kind == "proto" else "gzip"
    assert_only_validation_errors(body, (content_type, encoding))


# ---------------------------------------------------------------- generated code


def test_generated_module_is_up_to_date(tmp_path):
    proto = "svclog/serve/codecs/push.proto"
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{REPO}", f"--python_out={tmp_path}", str(REPO / proto)],
        check=True,
        capture_output=True,
    )
    fresh = (tmp_path / "svclog/serve/codecs/push_pb2.py").read_text()
    committed = (REPO / "svclog/serve/codecs/push_pb2.py").read_text().splitlines(keepends=True)
    # Our header (regeneration instructions, ruff exemption) sits above protoc's output.
    body = "".join(
        line for index, line in enumerate(committed) if index >= 4 or not line.startswith(("# svclog:", "# ruff: noqa"))
    )
    assert body == fresh, "push_pb2.py is stale: regenerate it (see its header)"
