"""Decode OTLP/HTTP log exports (protobuf or OTLP/JSON, optionally gzip) into push streams.

The mapping follows the reference's native OTLP ingestion: resource attributes
named in the default index-label list become index labels, every other resource,
scope and log attribute becomes structured metadata, names sanitised to label
syntax (`service.name` -> `service_name`). A tenant's `otlp_config` (OtlpRules)
adds rules that index, keep as metadata or drop attributes by name or regex. As with decode_push, any malformed
input raises ValidationError and nothing else; semantic checks (limits,
timestamps) stay in svclog.distributor.validate.
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from svclog.config.limits import DEFAULT_SERVICE_NAME_LABELS
from svclog.model import Entry, Labels, PushStream, ValidationError, now_ns
from svclog.serve.codecs.push import (
    JSON_CONTENT_TYPE,
    MALFORMED_BODY_ERRORS,
    PROTOBUF_CONTENT_TYPE,
    _clean,
    _decode_content_encoding,
    _media_type,
    _reject_constant,
)

# The reference's default `distributor.otlp.default_resource_attributes_as_index_labels`.
DEFAULT_INDEX_LABELS: tuple[str, ...] = (
    "service.name",
    "service.namespace",
    "service.instance.id",
    "deployment.environment",
    "deployment.environment.name",
    "cloud.region",
    "cloud.availability_zone",
    "k8s.cluster.name",
    "k8s.namespace.name",
    "k8s.pod.name",
    "k8s.container.name",
    "container.name",
    "k8s.replicaset.name",
    "k8s.deployment.name",
    "k8s.statefulset.name",
    "k8s.daemonset.name",
    "k8s.cronjob.name",
    "k8s.job.name",
)
SERVICE_NAME_ATTRIBUTE = "service.name"
SERVICE_NAME_LABEL = "service_name"
UNKNOWN_SERVICE = "unknown_service"

_TRACE_ID_BYTES = 16
_SPAN_ID_BYTES = 8
_UINT64 = 1 << 64
_INT64_MAX = (1 << 63) - 1
_INVALID_LABEL_CHARS = re.compile(r"[^a-zA-Z0-9_]")
_HEX = re.compile(r"[0-9a-fA-F]*")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_MAX_NESTING = 100  # protobuf's own recursion limit for nested AnyValues

Pairs = tuple[tuple[str, str], ...]

INDEX_LABEL, STRUCTURED_METADATA, DROP = "index_label", "structured_metadata", "drop"


# ---------------------------------------------------------------- per-tenant otlp_config


# push's backstop plus the OTLP JSON mapper's own error
_MALFORMED_OTLP_ERRORS: tuple[type[BaseException], ...] = (*MALFORMED_BODY_ERRORS, json_format.Error)


@dataclass(frozen=True)
class AttributeRule:
    """One `attributes_config` entry: an action for attributes named in `attributes` or matching `regex`."""

    action: str
    attributes: frozenset[str] = frozenset()
    regex: re.Pattern | None = None

    def matches(self, name: str) -> bool:
        return name in self.attributes or (self.regex is not None and self.regex.fullmatch(name) is not None)


@dataclass(frozen=True)
class OtlpRules:
    """`limits_config.otlp_config`, parsed: the first matching rule decides, else structured metadata."""

    resource: tuple[AttributeRule, ...] = (AttributeRule(INDEX_LABEL, frozenset(DEFAULT_INDEX_LABELS)),)
    scope: tuple[AttributeRule, ...] = ()
    log: tuple[AttributeRule, ...] = ()


def action_for(rules: tuple[AttributeRule, ...], name: str) -> str:
    # Matched on the raw OTLP key (`service.name`), before it is sanitised, as the reference does.
    return next((rule.action for rule in rules if rule.matches(name)), STRUCTURED_METADATA)


def otlp_rules(
    config: Mapping[str, Any] | None, default_index_labels: tuple[str, ...] = DEFAULT_INDEX_LABELS
) -> OtlpRules:
    """Parse an `otlp_config` block (raises ValueError or TypeError when malformed).

    Unless `resource_attributes.ignore_defaults`, the default index labels come first, so a
    tenant rule adds to them rather than overriding them; `index_label` is resource-only."""
    config = config or {}
    _known_keys(
        config, ("resource_attributes", "scope_attributes", "log_attributes", "severity_text_as_label"), "otlp_config"
    )
    resource = config.get("resource_attributes") or {}
    _known_keys(resource, ("ignore_defaults", "attributes_config"), "otlp_config.resource_attributes")
    defaults = (
        ()
        if resource.get("ignore_defaults") or not default_index_labels
        else (AttributeRule(INDEX_LABEL, frozenset(default_index_labels)),)
    )
    return OtlpRules(
        resource=defaults + _rules(resource.get("attributes_config"), "resource_attributes", index_ok=True),
        scope=_rules(config.get("scope_attributes"), "scope_attributes", index_ok=False),
        log=_rules(config.get("log_attributes"), "log_attributes", index_ok=False),
    )


def _rules(entries: Any, where: str, *, index_ok: bool) -> tuple[AttributeRule, ...]:
    if entries is None:
        return ()
    if not isinstance(entries, list):
        raise TypeError(f"otlp_config.{where}: expected a list of attribute rules")
    rules = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            raise TypeError(f"otlp_config.{where}: expected a mapping per rule")
        _known_keys(entry, ("action", "attributes", "regex"), f"otlp_config.{where}")
        action = entry.get("action")
        if action not in (INDEX_LABEL, STRUCTURED_METADATA, DROP):
            raise ValueError(
                f"otlp_config.{where}: invalid action {action!r}: use index_label, structured_metadata or drop"
            )
        if action == INDEX_LABEL and not index_ok:
            raise ValueError(f"otlp_config.{where}: {INDEX_LABEL} action is only supported for resource_attributes")
        names, pattern = entry.get("attributes") or [], entry.get("regex")
        if not names and not pattern:
            raise ValueError(f"otlp_config.{where}: a rule needs attributes or regex")
        try:
            regex = re.compile(str(pattern)) if pattern else None
        except re.error as err:
            raise ValueError(f"otlp_config.{where}: invalid regex {pattern!r}: {err}") from None
        rules.append(AttributeRule(action, frozenset(str(name) for name in names), regex))
    return tuple(rules)


def _known_keys(block: Any, keys: tuple[str, ...], where: str) -> None:
    if not isinstance(block, Mapping):
        raise TypeError(f"{where}: expected a mapping")
    unknown = sorted(set(block) - set(keys))
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r}")


# ---------------------------------------------------------------- decoding


def decode_otlp_logs(
    body: bytes,
    content_type: str | None,
    content_encoding: str | None,
    *,
    max_decompressed_bytes: int,
    index_label_attributes: tuple[str, ...] = DEFAULT_INDEX_LABELS,
    discover_service_name: tuple[str, ...] = DEFAULT_SERVICE_NAME_LABELS,
    rules: OtlpRules | None = None,
    now: int | None = None,
) -> list[PushStream]:
    """Decode an ExportLogsServiceRequest body into streams grouped by their index labels.

    `rules` is the tenant's parsed `otlp_config`; without it `index_label_attributes` are
    the resource attributes indexed and everything else is structured metadata.

    `discover_service_name` is the tenant's service-name discovery list: when a resource has
    no `service.name`, the first index label named in it supplies `service_name`, else
    `unknown_service`; an empty tuple turns discovery off. `now` stamps records that carry
    neither a timestamp nor an observed timestamp (default: the current time).
    """
    try:
        request = parse_export_request(body, content_type, content_encoding, max_decompressed_bytes)
        if rules is None:
            rules = OtlpRules(resource=(AttributeRule(INDEX_LABEL, frozenset(index_label_attributes)),))
        mapper = _Mapper(rules, discover_service_name, now)
        return mapper.map_request(request)
    except ValidationError:
        raise
    except _MALFORMED_OTLP_ERRORS as err:
        # Backstop for decoder edge cases; a client must see a 400, never a 500.
        raise ValidationError(f"invalid OTLP logs request body: {err}") from None


def parse_export_request(
    body: bytes, content_type: str | None, content_encoding: str | None, max_decompressed_bytes: int
) -> ExportLogsServiceRequest:
    media_type = _media_type(content_type)
    if media_type not in (PROTOBUF_CONTENT_TYPE, JSON_CONTENT_TYPE):
        raise ValidationError(f"content type: {content_type} is not supported")
    raw = _decode_content_encoding(bytes(body), content_encoding, max_decompressed_bytes)
    if media_type == JSON_CONTENT_TYPE:
        return _parse_json(raw)
    request = ExportLogsServiceRequest()
    try:
        request.ParseFromString(raw)
    except DecodeError as err:
        raise ValidationError(f"proto: cannot parse OTLP logs request: {err}") from None
    return request


def _parse_json(raw: bytes) -> ExportLogsServiceRequest:
    text = raw.decode("utf-8", "replace")
    try:
        document = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise ValidationError(f"invalid OTLP/JSON body: {err}") from None
    if not isinstance(document, dict):
        raise ValidationError("invalid OTLP/JSON body: expected an object")
    if _SURROGATE_ESCAPE.search(text):
        document = _scrub_surrogates(document)
    _hex_ids_to_base64(document)
    request = ExportLogsServiceRequest()
    try:
        # OTLP/JSON receivers must ignore unknown fields.
        json_format.ParseDict(document, request, ignore_unknown_fields=True)
    except json_format.ParseError as err:
        raise ValidationError(f"invalid OTLP/JSON body: {err}") from None
    return request


def _hex_ids_to_base64(document: dict) -> None:
    """OTLP/JSON writes trace and span ids as hex, where proto3 JSON expects base64."""
    for resource_logs in _objects(document, "resourceLogs", "resource_logs"):
        for scope_logs in _objects(resource_logs, "scopeLogs", "scope_logs"):
            for record in _objects(scope_logs, "logRecords", "log_records"):
                for key in ("traceId", "trace_id", "spanId", "span_id"):
                    value = record.get(key)
                    if isinstance(value, str):
                        if not _HEX.fullmatch(value) or len(value) % 2:
                            raise ValidationError(f"invalid OTLP/JSON body: {key} {value!r} is not hex")
                        record[key] = base64.b64encode(bytes.fromhex(value)).decode("ascii")


def _objects(parent: dict, *keys: str) -> Iterable[dict]:
    for key in keys:
        items = parent.get(key)
        if isinstance(items, list):
            yield from (item for item in items if isinstance(item, dict))


def _scrub_surrogates(value: Any) -> Any:
    # A lone \ud800 escape cannot be stored in a protobuf string; Go turns it into U+FFFD.
    if isinstance(value, str):
        return _clean(value)
    if isinstance(value, list):
        return [_scrub_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {_clean(key): _scrub_surrogates(item) for key, item in value.items()}
    return value


# ---------------------------------------------------------------- mapping


class _Mapper:
    """Turns one parsed request into streams; holds the per-request settings."""

    def __init__(self, rules: OtlpRules, discover: tuple[str, ...], now: int | None):
        self.rules = rules
        self.discover = discover
        self.now = now
        self.streams: dict[Labels, PushStream] = {}

    def map_request(self, request: ExportLogsServiceRequest) -> list[PushStream]:
        for resource_logs in request.resource_logs:
            labels, resource_metadata = self._resource(resource_logs.resource.attributes)
            stream = self.streams.get(labels)
            for scope_logs in resource_logs.scope_logs:
                scope_metadata = _scope_metadata(scope_logs.scope, self.rules.scope)
                for record in scope_logs.log_records:
                    if stream is None:
                        stream = self.streams[labels] = PushStream(labels, [])
                    stream.entries.append(self._entry(record, resource_metadata + scope_metadata))
        return list(self.streams.values())

    def _resource(self, attributes: Iterable[KeyValue]) -> tuple[Labels, Pairs]:
        labels: dict[str, str] = {}
        metadata: list[tuple[str, str]] = []
        has_service_name = False
        discovered: str | None = None
        for attribute in attributes:
            if attribute.key == SERVICE_NAME_ATTRIBUTE and any_value_string(attribute.value) != "":
                has_service_name = True  # even when dropped or kept as metadata, as the reference
            action = action_for(self.rules.resource, attribute.key)
            if action == DROP:
                continue
            pairs = attribute_pairs(attribute.key, attribute.value)
            if action == INDEX_LABEL:
                labels.update(pairs)
                if discovered is None:
                    # Like the reference: the first index label (in wire order) on the discovery list.
                    discovered = next((value for name, value in pairs if value and name in self.discover), None)
            else:
                metadata.extend(pairs)
        if not has_service_name and self.discover:
            labels[SERVICE_NAME_LABEL] = discovered or UNKNOWN_SERVICE
        return Labels(labels.items()), tuple(metadata)

    def _entry(self, record: LogRecord, shared_metadata: Pairs) -> Entry:
        metadata = _kept_pairs(record.attributes, self.rules.log)
        ts = record.time_unix_nano or record.observed_time_unix_nano
        if record.time_unix_nano and record.observed_time_unix_nano:
            metadata.append(("observed_timestamp", str(_as_int64(record.observed_time_unix_nano))))
        if record.severity_number:
            metadata.append(("severity_number", str(record.severity_number)))
        if record.severity_text:
            metadata.append(("severity_text", record.severity_text))
        if record.dropped_attributes_count:
            metadata.append(("dropped_attributes_count", str(record.dropped_attributes_count)))
        if record.flags:
            metadata.append(("flags", str(record.flags)))
        for name, raw, size in (
            ("trace_id", record.trace_id, _TRACE_ID_BYTES),
            ("span_id", record.span_id, _SPAN_ID_BYTES),
        ):
            if raw and len(raw) != size:
                raise ValidationError(f"invalid OTLP log record: {name} must be {size} bytes, not {len(raw)}")
            if any(raw):  # an all-zero id means "no id"
                metadata.append((name, raw.hex()))
        if ts:
            stamp = _as_int64(ts)
        else:
            if self.now is None:
                self.now = now_ns()
            stamp = self.now
        return Entry(stamp, any_value_string(record.body), tuple(metadata) + shared_metadata)


def _kept_pairs(attributes: Iterable[KeyValue], rules: tuple[AttributeRule, ...]) -> list[tuple[str, str]]:
    """Scope or log attributes as structured metadata, less those a `drop` rule names."""
    return [
        pair
        for attribute in attributes
        if action_for(rules, attribute.key) != DROP
        for pair in attribute_pairs(attribute.key, attribute.value)
    ]


def _scope_metadata(scope: InstrumentationScope, rules: tuple[AttributeRule, ...]) -> Pairs:
    metadata = _kept_pairs(scope.attributes, rules)
    if scope.name:
        metadata.append(("scope_name", scope.name))
    if scope.version:
        metadata.append(("scope_version", scope.version))
    if scope.dropped_attributes_count:
        metadata.append(("scope_dropped_attributes_count", str(scope.dropped_attributes_count)))
    return tuple(metadata)


def _as_int64(nanos: int) -> int:
    # fixed64 on the wire; the reference reads it as a signed int64, so huge values wrap negative.
    return nanos - _UINT64 if nanos > _INT64_MAX else nanos


# ---------------------------------------------------------------- attribute values


def sanitize_name(name: str) -> str:
    """An attribute key as a label name: `service.name` -> `service_name`, `1a` -> `key_1a`."""
    if not name:
        return name
    name = _INVALID_LABEL_CHARS.sub("_", name)
    if name[0].isdigit():
        return "key_" + name
    if name.startswith("_") and not name.startswith("__"):
        return "key" + name
    return name


def attribute_pairs(key: str, value: AnyValue, prefix: str = "", depth: int = 0) -> list[tuple[str, str]]:
    """One attribute as (name, value) pairs; a map value flattens to `key_subkey` names. An empty
    name fails the whole request, as the reference's label namer refuses it."""
    if not key and not prefix:
        raise ValidationError("symbolizer lookup: label name is empty")
    name = sanitize_name(f"{prefix}_{key}" if prefix else key)
    if value.WhichOneof("value") != "kvlist_value":
        return [(name, any_value_string(value))]
    if depth >= _MAX_NESTING:
        raise ValidationError("invalid OTLP attribute: values nested too deeply")
    return [
        pair for item in value.kvlist_value.values for pair in attribute_pairs(item.key, item.value, name, depth + 1)
    ]


def any_value_string(value: AnyValue) -> str:
    """An AnyValue as text the way the reference renders it: scalars plainly, the rest as JSON."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind in ("kvlist_value", "array_value"):
        try:
            return _go_json(value, 0)
        except _UnsupportedNumber:
            return ""  # Go's marshaller fails on NaN/Inf and the reference keeps the empty result
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    if kind == "bool_value":
        return "true" if value.bool_value else "false"
    if kind == "int_value":
        return str(value.int_value)
    if kind == "double_value":
        return _go_float(value.double_value)
    return ""


class _UnsupportedNumber(Exception):
    """NaN or an infinity inside a map or array value, which JSON cannot hold."""


def _go_json(value: AnyValue, depth: int) -> str:
    """Compact JSON like Go's encoding/json: sorted map keys, ES6 numbers, no HTML escaping."""
    if depth > _MAX_NESTING:
        raise ValidationError("invalid OTLP value: nested too deeply")
    kind = value.WhichOneof("value")
    if kind == "kvlist_value":
        items = {item.key: item.value for item in value.kvlist_value.values}  # the last duplicate wins
        return "{" + ",".join(f"{_go_string(key)}:{_go_json(items[key], depth + 1)}" for key in sorted(items)) + "}"
    if kind == "array_value":
        return "[" + ",".join(_go_json(item, depth + 1) for item in value.array_value.values) + "]"
    if kind == "string_value":
        return _go_string(value.string_value)
    if kind == "bytes_value":
        return '"' + base64.b64encode(value.bytes_value).decode("ascii") + '"'
    if kind == "double_value":
        if not math.isfinite(value.double_value):
            raise _UnsupportedNumber
        return _go_float(value.double_value)
    if kind in ("bool_value", "int_value"):
        return any_value_string(value)
    return "null"


def _go_string(text: str) -> str:
    quoted = json.dumps(text, ensure_ascii=False)
    return quoted.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _go_float(number: float) -> str:
    """Go's JSON number format (ES6 style): plain decimals, exponents only outside [1e-6, 1e21)."""
    if math.isnan(number):
        return "json: unsupported value: NaN"
    if math.isinf(number):
        return "json: unsupported value: " + ("+Inf" if number > 0 else "-Inf")
    magnitude = abs(number)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        # repr gives the shortest digits, already in exponent form in this range.
        return re.sub(r"e-0(\d)$", r"e-\1", repr(number))
    text = format(Decimal(repr(number)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


# ---------------------------------------------------------------- responses and test helpers


def encode_export_response(media_type: str) -> tuple[bytes, str]:
    """An empty ExportLogsServiceResponse in the encoding the request used."""
    if media_type == JSON_CONTENT_TYPE:
        return b"{}", JSON_CONTENT_TYPE
    return ExportLogsServiceResponse().SerializeToString(), PROTOBUF_CONTENT_TYPE


def encode_otlp_logs_protobuf(request: ExportLogsServiceRequest) -> bytes:
    return request.SerializeToString()


def encode_otlp_logs_json(request: ExportLogsServiceRequest) -> bytes:
    """OTLP/JSON: proto3 JSON with camelCase keys, except that trace and span ids are hex."""
    document = json_format.MessageToDict(request)
    for resource_logs in document.get("resourceLogs", []):
        for scope_logs in resource_logs.get("scopeLogs", []):
            for record in scope_logs.get("logRecords", []):
                for key in ("traceId", "spanId"):
                    if key in record:
                        record[key] = base64.b64decode(record[key]).hex()
    return json.dumps(document, separators=(",", ":")).encode("utf-8")
