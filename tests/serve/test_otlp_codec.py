"""OTLP logs decoding: both encodings, gzip, the label/metadata mapping, hostile input, the real SDK."""

from __future__ import annotations

import base64
import gzip
import json
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from svclog.model import Labels, PushStream, ValidationError
from svclog.serve.codecs.otlp import (
    DEFAULT_INDEX_LABELS,
    any_value_string,
    decode_otlp_logs,
    encode_otlp_logs_json,
    encode_otlp_logs_protobuf,
    sanitize_name,
)
from svclog.serve.codecs.push import PushTooLargeError

LIMIT = 1 << 20
PROTO = "application/x-protobuf"
JSON = "application/json"
NOW = 1_700_000_000_000_000_000
TRACE = bytes(range(1, 17))
SPAN = bytes(range(1, 9))


def decode(body: bytes, content_type: str | None = PROTO, encoding: str | None = None, **kw) -> list[PushStream]:
    kw.setdefault("max_decompressed_bytes", LIMIT)
    kw.setdefault("now", NOW)
    return decode_otlp_logs(body, content_type, encoding, **kw)


def value(raw: object) -> AnyValue:
    """A Python value as an AnyValue (dict -> kvlist, list -> array, None -> empty)."""
    out = AnyValue()
    if isinstance(raw, bool):
        out.bool_value = raw
    elif isinstance(raw, int):
        out.int_value = raw
    elif isinstance(raw, float):
        out.double_value = raw
    elif isinstance(raw, str):
        out.string_value = raw
    elif isinstance(raw, bytes):
        out.bytes_value = raw
    elif isinstance(raw, dict):
        out.kvlist_value.values.extend(attrs(raw))
    elif isinstance(raw, list):
        out.array_value.values.extend(value(item) for item in raw)
    return out


def attrs(mapping: dict) -> list[KeyValue]:
    return [KeyValue(key=key, value=value(raw)) for key, raw in mapping.items()]


def request(resources: list[tuple[dict, list[LogRecord]]], scope: dict | None = None) -> ExportLogsServiceRequest:
    out = ExportLogsServiceRequest()
    for resource_attrs, records in resources:
        resource_logs = out.resource_logs.add()
        resource_logs.resource.attributes.extend(attrs(resource_attrs))
        scope_logs = resource_logs.scope_logs.add()
        for key, raw in (scope or {}).items():
            if key == "attributes":
                scope_logs.scope.attributes.extend(attrs(raw))
            else:
                setattr(scope_logs.scope, key, raw)
        scope_logs.log_records.extend(records)
    return out


def record(body: object = "hello", ts: int = 1_000, **fields) -> LogRecord:
    extra = fields.pop("attributes", {})
    out = LogRecord(time_unix_nano=ts, body=value(body), **fields)
    out.attributes.extend(attrs(extra))
    return out


def full_request() -> ExportLogsServiceRequest:
    return request(
        [
            (
                {
                    "service.name": "checkout",
                    "k8s.namespace.name": "shop",
                    "host.name": "node-1",
                    "deployment.environment.name": "prod",
                },
                [
                    record(
                        "payment ok",
                        ts=1_000,
                        observed_time_unix_nano=1_500,
                        severity_number=9,
                        severity_text="INFO",
                        trace_id=TRACE,
                        span_id=SPAN,
                        flags=1,
                        attributes={"http.method": "POST", "retries": 2},
                    ),
                    record({"msg": "done", "n": 1.5}, ts=2_000),
                ],
            )
        ],
        scope={"name": "app.payments", "version": "1.2.0", "attributes": {"lib.kind": "sdk"}},
    )


EXPECTED_LABELS = Labels.from_dict(
    {"service_name": "checkout", "k8s_namespace_name": "shop", "deployment_environment_name": "prod"}
)
SHARED = (("host_name", "node-1"), ("lib_kind", "sdk"), ("scope_name", "app.payments"), ("scope_version", "1.2.0"))


def check_full(streams: list[PushStream]) -> None:
    assert len(streams) == 1
    stream = streams[0]
    assert stream.labels == EXPECTED_LABELS
    first, second = stream.entries
    assert (first.ts, first.line) == (1_000, "payment ok")
    assert (
        first.metadata
        == (
            ("http_method", "POST"),
            ("retries", "2"),
            ("observed_timestamp", "1500"),
            ("severity_number", "9"),
            ("severity_text", "INFO"),
            ("flags", "1"),
            ("trace_id", TRACE.hex()),
            ("span_id", SPAN.hex()),
        )
        + SHARED
    )
    assert (second.ts, second.line, second.metadata) == (2_000, '{"msg":"done","n":1.5}', SHARED)


# ---------------------------------------------------------------- encodings


def test_protobuf_round_trip():
    check_full(decode(encode_otlp_logs_protobuf(full_request())))


def test_json_round_trip_uses_hex_ids_and_string_int64():
    body = encode_otlp_logs_json(full_request())
    document = json.loads(body)
    log = document["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]
    assert log["traceId"] == TRACE.hex() and log["spanId"] == SPAN.hex()
    assert log["timeUnixNano"] == "1000"
    check_full(decode(body, JSON))


def test_hand_written_otlp_json():
    # The shape of the OTLP specification's example, snake_case keys and enum names included.
    body = json.dumps(
        {
            "resourceLogs": [
                {
                    "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "my.service"}}]},
                    "scopeLogs": [
                        {
                            "scope": {"name": "my.library", "version": "1.0.0"},
                            "logRecords": [
                                {
                                    "timeUnixNano": "1544712660300000000",
                                    "observedTimeUnixNano": 1544712660300000000,
                                    "severity_number": "SEVERITY_NUMBER_WARN",
                                    "severityText": "Information",
                                    "traceId": "5B8EFFF798038103D269B633813FC60C",
                                    "spanId": "EEE19B7EC3C1B174",
                                    "body": {"stringValue": "Example log record"},
                                    "attributes": [
                                        {"key": "string.attribute", "value": {"stringValue": "some string"}},
                                        {"key": "int.attribute", "value": {"intValue": "10"}},
                                        {"key": "double.attribute", "value": {"doubleValue": 637.704}},
                                        {
                                            "key": "array.attribute",
                                            "value": {
                                                "arrayValue": {"values": [{"stringValue": "many"}, {"intValue": 2}]}
                                            },
                                        },
                                        {
                                            "key": "map.attribute",
                                            "value": {
                                                "kvlistValue": {
                                                    "values": [{"key": "some.map.key", "value": {"boolValue": True}}]
                                                }
                                            },
                                        },
                                        {
                                            "key": "bytes.attribute",
                                            "value": {"bytesValue": base64.b64encode(b"\x00\xff").decode()},
                                        },
                                    ],
                                    "someFutureField": {"ignored": True},
                                }
                            ],
                        }
                    ],
                }
            ],
        }
    ).encode()
    [stream] = decode(body, "application/json; charset=utf-8")
    assert stream.labels == Labels.from_dict({"service_name": "my.service"})
    [entry] = stream.entries
    assert entry.ts == 1544712660300000000 and entry.line == "Example log record"
    assert dict(entry.metadata) == {
        "string_attribute": "some string",
        "int_attribute": "10",
        "double_attribute": "637.704",
        "array_attribute": '["many",2]',
        "map_attribute_some_map_key": "true",
        "bytes_attribute": "AP8=",
        "observed_timestamp": "1544712660300000000",
        "severity_number": "13",
        "severity_text": "Information",
        "trace_id": "5b8efff798038103d269b633813fc60c",
        "span_id": "eee19b7ec3c1b174",
        "scope_name": "my.library",
        "scope_version": "1.0.0",
    }


@pytest.mark.parametrize("content_type", [PROTO, JSON])
def test_gzip_bodies(content_type):
    plain = (
        encode_otlp_logs_protobuf(full_request()) if content_type == PROTO else encode_otlp_logs_json(full_request())
    )
    check_full(decode(gzip.compress(plain), content_type, "gzip"))


def test_deflate_body():
    check_full(decode(zlib.compress(encode_otlp_logs_protobuf(full_request())), PROTO, "deflate"))


def test_empty_request_gives_no_streams():
    assert decode(b"", PROTO) == []
    assert decode(b"{}", JSON) == []
    assert decode(encode_otlp_logs_protobuf(request([({"service.name": "a"}, [])])), PROTO) == []


# ---------------------------------------------------------------- mapping


def test_every_default_index_attribute_becomes_a_label():
    resource = {name: f"v{i}" for i, name in enumerate(DEFAULT_INDEX_LABELS)}
    [stream] = decode(encode_otlp_logs_protobuf(request([(resource, [record()])])))
    assert stream.labels == Labels((sanitize_name(name), f"v{i}") for i, name in enumerate(DEFAULT_INDEX_LABELS))
    assert stream.entries[0].metadata == ()


def test_missing_service_name_is_discovered_or_unknown():
    body = encode_otlp_logs_protobuf(
        request(
            [
                ({"k8s.pod.name": "p-1"}, [record("a")]),
                ({"k8s.container.name": "web", "k8s.job.name": "nightly"}, [record("b")]),
                ({"service.name": ""}, [record("c")]),
            ]
        )
    )
    labels = [s.labels.to_dict() for s in decode(body)]
    assert labels == [
        {"k8s_pod_name": "p-1", "service_name": "unknown_service"},
        {"k8s_container_name": "web", "k8s_job_name": "nightly", "service_name": "web"},
        {"service_name": "unknown_service"},
    ]
    no_discovery = decode(body, discover_service_name=())
    assert no_discovery[0].labels.to_dict() == {"k8s_pod_name": "p-1"}


def test_custom_index_label_attributes():
    body = encode_otlp_logs_protobuf(request([({"service.name": "a", "team": "core"}, [record()])]))
    [stream] = decode(body, index_label_attributes=("team",))
    # service.name is present, so nothing is discovered even though it is not an index label.
    assert stream.labels.to_dict() == {"team": "core"}
    assert stream.entries[0].metadata == (("service_name", "a"),)


def test_resources_with_equal_labels_share_a_stream():
    body = encode_otlp_logs_protobuf(
        request(
            [
                ({"service.name": "a", "host.name": "h1"}, [record("one")]),
                ({"service.name": "b"}, [record("two")]),
                ({"service.name": "a", "host.name": "h2"}, [record("three")]),
            ]
        )
    )
    streams = decode(body)
    assert [(s.labels.get("service_name"), [e.line for e in s.entries]) for s in streams] == [
        ("a", ["one", "three"]),
        ("b", ["two"]),
    ]
    assert [e.metadata for e in streams[0].entries] == [(("host_name", "h1"),), (("host_name", "h2"),)]


def test_nested_attribute_maps_flatten_and_names_are_sanitised():
    attributes = {
        "http": {"request": {"method": "GET", "header.x-id": ["a", "b"]}},
        "1st": "x",
        "_private": "y",
        "__dunder": "z",
        "ünï": "w",
    }
    [stream] = decode(encode_otlp_logs_protobuf(request([({"service.name": "s"}, [record(attributes=attributes)])])))
    assert stream.entries[0].metadata == (
        ("http_request_method", "GET"),
        ("http_request_header_x_id", '["a","b"]'),
        ("key_1st", "x"),
        ("key_private", "y"),
        ("__dunder", "z"),
        ("key_n_", "w"),
    )


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        ("plain", "plain"),
        (True, "true"),
        (-42, "-42"),
        (0.5, "0.5"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1.5e-7, "1.5e-7"),
        (100.0, "100"),
        (b"\x01\x02", "AQI="),
        ({}, "{}"),
        ([], "[]"),
        ({"b": 1, "a": [None, 2.0, b"\xff"]}, '{"a":[null,2,"/w=="],"b":1}'),
        ({"html": "<&>", "sep": "\u2028", "ctl": "\x01\n"}, '{"ctl":"\\u0001\\n","html":"<&>","sep":"\\u2028"}'),
        ([float("nan")], ""),
        (float("inf"), "json: unsupported value: +Inf"),
    ],
)
def test_body_and_attribute_values_render_like_the_reference(raw, text):
    assert any_value_string(value(raw)) == text


def test_empty_body_is_an_empty_line():
    rec = LogRecord(time_unix_nano=7)
    [stream] = decode(encode_otlp_logs_protobuf(request([({"service.name": "s"}, [rec])])))
    assert stream.entries[0].line == ""


def test_timestamps_fall_back_to_observed_then_now():
    records = [
        LogRecord(time_unix_nano=5, observed_time_unix_nano=9),
        LogRecord(observed_time_unix_nano=9),
        LogRecord(),
        LogRecord(time_unix_nano=(1 << 64) - 1),
    ]
    [stream] = decode(encode_otlp_logs_protobuf(request([({"service.name": "s"}, records)])))
    assert [e.ts for e in stream.entries] == [5, 9, NOW, -1]
    assert stream.entries[0].metadata == (("observed_timestamp", "9"),)
    assert stream.entries[1].metadata == ()  # an observed time used as the timestamp is not repeated


def test_zero_ids_are_omitted_and_wrong_lengths_rejected():
    zero = LogRecord(time_unix_nano=1, trace_id=bytes(16), span_id=bytes(8))
    [stream] = decode(encode_otlp_logs_protobuf(request([({"service.name": "s"}, [zero])])))
    assert stream.entries[0].metadata == ()
    for bad in (LogRecord(trace_id=b"\x01" * 15), LogRecord(span_id=b"\x01" * 9)):
        with pytest.raises(ValidationError, match="must be"):
            decode(encode_otlp_logs_protobuf(request([({"service.name": "s"}, [bad])])))


def test_scope_dropped_counts_and_record_counters():
    rec = LogRecord(time_unix_nano=1, dropped_attributes_count=3, severity_number=17)
    body = encode_otlp_logs_protobuf(request([({"service.name": "s"}, [rec])], scope={"dropped_attributes_count": 2}))
    [stream] = decode(body)
    assert stream.entries[0].metadata == (
        ("severity_number", "17"),
        ("dropped_attributes_count", "3"),
        ("scope_dropped_attributes_count", "2"),
    )


# ---------------------------------------------------------------- hostile input


@pytest.mark.parametrize(
    ("body", "content_type", "encoding", "message"),
    [
        (b"\xff\xff\xff", PROTO, None, "proto"),
        (b"{", JSON, None, "OTLP/JSON"),
        (b"[]", JSON, None, "expected an object"),
        (b'{"resourceLogs": 5}', JSON, None, "OTLP/JSON"),
        (b'{"resourceLogs": [{"scopeLogs": [{"logRecords": [{"traceId": "xyz"}]}]}]}', JSON, None, "not hex"),
        (b'{"resourceLogs": [{"scopeLogs": [{"logRecords": [{"spanId": "0102"}]}]}]}', JSON, None, "must be 8"),
        (b'{"resourceLogs": [{"scopeLogs": [{"logRecords": [{"timeUnixNano": "-1"}]}]}]}', JSON, None, "OTLP/JSON"),
        (b'{"resourceLogs": NaN}', JSON, None, "NaN"),
        (b"{}", "text/plain", None, "not supported"),
        (b"{}", None, None, "media type"),
        (b"{}", JSON, "br", "not supported"),
        (b"not gzip", PROTO, "gzip", "gzip"),
    ],
)
def test_malformed_bodies_are_validation_errors(body, content_type, encoding, message):
    with pytest.raises(ValidationError, match=message):
        decode(body, content_type, encoding)


def test_lone_surrogate_escapes_become_replacement_characters():
    body = b'{"resourceLogs": [{"scopeLogs": [{"logRecords": [{"timeUnixNano": "1", "body": {"stringValue": "a\\ud800"}}]}]}]}'
    [stream] = decode(body, JSON)
    assert stream.entries[0].line == "a\ufffd"


def test_decompression_bomb_is_capped():
    bomb = gzip.compress(b"\x00" * (LIMIT * 8))
    with pytest.raises(PushTooLargeError):
        decode(bomb, PROTO, "gzip")
    with pytest.raises(PushTooLargeError):
        decode(b"\x00" * (LIMIT + 1), PROTO)


def test_deep_nesting_is_rejected_not_crashing():
    deep = '{"arrayValue": {"values": [' * 2000 + '{"stringValue": "x"}' + "]}}" * 2000
    body = ('{"resourceLogs": [{"scopeLogs": [{"logRecords": [{"body": ' + deep + "}]}]}]}").encode()
    with pytest.raises(ValidationError):
        decode(body, JSON)
    # The same in protobuf, built by hand: AnyValue.array_value (5) -> ArrayValue.values (1) -> ...
    nested = AnyValue(string_value="x").SerializeToString()
    for _ in range(150):
        nested = _field(5, _field(1, nested))
    body = _field(1, _field(2, _field(2, _field(5, nested))))  # request -> resource -> scope -> record
    with pytest.raises(ValidationError):
        decode(body, PROTO)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    out, size = bytearray([number << 3 | 2]), len(payload)
    while size > 0x7F:
        out.append(size & 0x7F | 0x80)
        size >>= 7
    out.append(size)
    return bytes(out) + payload


FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(
    body=st.binary(max_size=2048),
    content_type=st.sampled_from([PROTO, JSON]),
    encoding=st.sampled_from([None, "gzip", "deflate", "identity"]),
)
def test_random_bytes_only_raise_validation_errors(body, content_type, encoding):
    try:
        streams = decode(body, content_type, encoding)
    except ValidationError:
        return
    assert all(isinstance(s, PushStream) for s in streams)


def _mutations(data: bytes) -> st.SearchStrategy[bytes]:
    return st.tuples(st.integers(0, max(len(data) - 1, 0)), st.binary(min_size=0, max_size=8)).map(
        lambda edit: data[: edit[0]] + edit[1] + data[edit[0] + len(edit[1]) :]
    )


@FUZZ
@given(body=_mutations(encode_otlp_logs_protobuf(full_request())))
def test_mutated_protobuf_only_raises_validation_errors(body):
    try:
        decode(body, PROTO)
    except ValidationError:
        pass


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "resourceLogs",
                    "scopeLogs",
                    "logRecords",
                    "resource",
                    "attributes",
                    "key",
                    "value",
                    "stringValue",
                    "kvlistValue",
                    "arrayValue",
                    "values",
                    "body",
                    "traceId",
                    "spanId",
                    "timeUnixNano",
                    "severityNumber",
                    "bytesValue",
                    "intValue",
                    "doubleValue",
                    "x",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=30,
)


@FUZZ
@given(document=JSON_VALUES)
def test_random_otlp_shaped_json_only_raises_validation_errors(document):
    try:
        decode(json.dumps(document).encode(), JSON)
    except ValidationError:
        pass


# ---------------------------------------------------------------- the real OpenTelemetry SDK


class _CaptureServer(ThreadingHTTPServer):
    """Records (path, lower-cased headers, body) of every POST and answers 200."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Capture)
        self.captured: list[tuple[str, dict[str, str], bytes]] = []


class _Capture(BaseHTTPRequestHandler):
    server: _CaptureServer

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        self.server.captured.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def capture_server():
    server = _CaptureServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_opentelemetry_sdk_exporter_bodies_decode(capture_server, monkeypatch, compression):
    from opentelemetry._logs import SeverityNumber
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    port = capture_server.server_address[1]
    # Configured the way users are told to: the base URL, to which the SDK appends /v1/logs.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{port}/otlp")
    resource = Resource.create(
        {"service.name": "sdk-test", "service.instance.id": "i-1", "k8s.pod.name": "pod-7", "team": "core"}
    )
    provider = LoggerProvider(resource=resource)
    provider.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(compression=Compression(compression))))
    logger = provider.get_logger("svclog.test.otlp", "0.1")
    tracer = TracerProvider(resource=resource).get_tracer("svclog.test")
    try:
        with tracer.start_as_current_span("checkout") as span:
            logger.emit(
                body="disk sda1 is full",
                severity_number=SeverityNumber.WARN,
                severity_text="WARN",
                attributes={"disk.free": 0, "attempt": 3, "ratio": 0.25, "tags": ["a", "b"]},
                timestamp=1_700_000_000_123_456_789,
            )
            context = span.get_span_context()
        logger.emit(
            body={"event": "recovered", "after_s": 12}, severity_number=SeverityNumber.INFO, severity_text="INFO"
        )
        provider.force_flush()
    finally:
        provider.shutdown()

    assert len(capture_server.captured) == 2
    entries = []
    for path, headers, body in capture_server.captured:
        assert path == "/otlp/v1/logs"
        assert headers["content-type"] == PROTO
        assert headers.get("content-encoding") == (None if compression == "none" else "gzip")
        [stream] = decode(body, headers["content-type"], headers.get("content-encoding"), now=None)
        assert stream.labels == Labels.from_dict(
            {"service_name": "sdk-test", "service_instance_id": "i-1", "k8s_pod_name": "pod-7"}
        )
        entries += stream.entries
    warning, info = entries
    assert warning.ts == 1_700_000_000_123_456_789 and warning.line == "disk sda1 is full"
    assert info.line == '{"after_s":12,"event":"recovered"}' and info.ts > 0
    meta = dict(warning.metadata)
    assert (meta["severity_text"], meta["severity_number"]) == ("WARN", "13")
    assert (meta["disk_free"], meta["attempt"], meta["ratio"], meta["tags"]) == ("0", "3", "0.25", '["a","b"]')
    assert meta["trace_id"] == f"{context.trace_id:032x}" and meta["span_id"] == f"{context.span_id:016x}"
    assert meta["team"] == "core" and meta["telemetry_sdk_language"] == "python"
    assert (meta["scope_name"], meta["scope_version"]) == ("svclog.test.otlp", "0.1")
    assert "observed_timestamp" in meta
    assert dict(info.metadata)["severity_text"] == "INFO" and "trace_id" not in dict(info.metadata)
