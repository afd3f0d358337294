"""The endpoints Grafana Logs Drilldown and logcli call beside queries: request parameters
-> backend calls -> the reference's bare answer objects (no status/data envelope).

- detected_labels: stream labels of the selected streams with their cardinality.
- detected_fields, detected_field/<name>/values: fields of the newest `line_limit`
  entries of a log query, read with categorized labels (see svclog.querier.detected).
- drilldown-limits: the tenant's published limits (only the reference's default
  allowlist, each value in its JSON form), whether patterns are on, and the version.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from svclog.config import Config
from svclog.config.fields import PROM_DURATION
from svclog.config.limits import LimitsConfig
from svclog.frontend import params as qp
from svclog.gocompat.durations import format_prom_duration
from svclog.model import ValidationError
from svclog.querier import detected
from svclog.querier.request import CATEGORIZE_LABELS
from svclog.serve.codecs.otlp import DEFAULT_INDEX_LABELS

DEFAULT_FIELD_LIMIT = 1000


async def detected_labels(backend: Any, tenants: list[str], form: Mapping[str, str]) -> dict:
    start, end = qp.time_range(form, qp.HOUR)
    if end < start:
        raise ValidationError("end timestamp must not be before or equal to start time")
    query = form.get("query") or None
    if query:
        detected.check_label_matchers(query)
    names = await backend.label_names(tenants, start, end, query)
    values = await asyncio.gather(*(backend.label_values(tenants, name, start, end, query) for name in names))
    return detected.labels_body(detected.detect_labels(dict(zip(names, values))))


async def detected_fields(
    backend: Any, tenants: list[str], form: Mapping[str, str], name: str | None, actor_path: tuple[str, ...] = ()
) -> dict:
    """Fields of the sample (name None) or the values of field `name`."""
    detected.check_log_selector(form.get("query") or "")
    limit_text = form.get("limit") or form.get("field_limit") or ""  # field_limit: older clients
    limit = qp.limit_param({"limit": limit_text}, DEFAULT_FIELD_LIMIT)
    sample = dict(form, limit=form.get("line_limit") or "", direction="backward")
    sample.pop("interval", None)
    request = replace(qp.range_request(sample), encoding_flags=(CATEGORIZE_LABELS,))
    data = await backend.query(tenants, request, actor_path)
    entries = detected.entries_from_streams(data.get("result") or ())
    if name is None:
        return detected.fields_body(detected.detect_fields(entries, limit), None, limit)
    return detected.fields_body([], detected.field_values(entries, name, limit), limit)


# ---------------------------------------------------------------- drilldown-limits

PUBLISHED_LIMITS = (
    "discover_log_levels",
    "discover_service_name",
    "log_level_fields",
    "max_entries_limit_per_query",
    "max_line_size_truncate",
    "max_query_bytes_read",
    "max_query_length",
    "max_query_lookback",
    "max_query_range",
    "max_query_series",
    "metric_aggregation_enabled",
    "otlp_config",
    "pattern_persistence_enabled",
    "query_timeout",
    "retention_period",
    "retention_stream",
    "volume_enabled",
    "volume_max_series",
)


def otlp_index_labels(cfg: Config) -> tuple[str, ...]:
    """`distributor.otlp_config.default_resource_attributes_as_index_labels`, or the reference's default."""
    configured = cfg.distributor.otlp_config.get("default_resource_attributes_as_index_labels")
    return DEFAULT_INDEX_LABELS if configured is None else tuple(configured)


def drilldown_limits(
    limits: LimitsConfig, otlp_index_labels: tuple[str, ...], *, pattern_ingester_enabled: bool, version: str
) -> dict[str, Any]:
    return {
        "limits": published_limits(limits, otlp_index_labels),
        "pattern_ingester_enabled": pattern_ingester_enabled,
        "version": version or "unknown",
    }


def published_limits(limits: LimitsConfig, otlp_index_labels: tuple[str, ...]) -> dict[str, Any]:
    """Prometheus durations as strings (`30d1h`, `0s`), byte sizes as numbers, an empty
    `retention_stream` left out, `otlp_config` as the distributor applies it."""
    kinds = {f.name: f.metadata.get("kind") for f in dataclasses.fields(LimitsConfig)}
    out: dict[str, Any] = {}
    for name in PUBLISHED_LIMITS:
        value = getattr(limits, name)
        if name == "otlp_config":
            out[name] = _otlp_config(value, otlp_index_labels)
        elif name == "retention_stream":
            if value:
                out[name] = [
                    {"selector": r.selector, "priority": r.priority, "period": format_prom_duration(r.period)}
                    for r in value
                ]
        elif kinds[name] == PROM_DURATION:
            out[name] = format_prom_duration(value)
        elif isinstance(value, tuple):
            out[name] = list(value)
        else:
            out[name] = value
    return out


def _otlp_config(configured: dict, index_labels: tuple[str, ...]) -> dict:
    """The tenant's otlp_config with the default index-label rule first (unless ignore_defaults)."""
    out = {k: v for k, v in (configured or {}).items() if v not in (None, [], {}, False)}
    resource = dict(out.get("resource_attributes") or {})
    rules = list(resource.get("attributes_config") or [])
    if not resource.get("ignore_defaults") and index_labels:
        rules.insert(0, {"action": "index_label", "attributes": list(index_labels)})
    if rules:
        resource["attributes_config"] = rules
    if resource:
        out["resource_attributes"] = resource
    return out
