"""Metrics-system-compatible views: `GET /compat/api/v1/rules` and `/compat/api/v1/alerts` data.

Shapes follow the Prometheus HTTP API (`data.groups[].rules[]` with `type`
`alerting`/`recording`, `data.alerts[]`), so dashboards built for it read them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from svclog.model import ValidationError, format_rfc3339
from svclog.ruler.group import GroupState
from svclog.ruler.rules import INACTIVE, Alert, AlertingRule, RecordingRule

ZERO_TIME = "0001-01-01T00:00:00Z"  # how Go prints a time that never happened


@dataclass(frozen=True)
class RuleFilters:
    type: str = ""  # "", "alert" or "record"
    files: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    names: frozenset[str] = frozenset()


def parse_filters(
    type_: str | None, files: Iterable[str] = (), groups: Iterable[str] = (), names: Iterable[str] = ()
) -> RuleFilters:
    kind = (type_ or "").lower()
    if kind not in ("", "alert", "record"):
        raise ValidationError(f'not supported value "{kind}"')
    return RuleFilters(kind, frozenset(files), frozenset(groups), frozenset(names))


def format_value(value: float) -> str:
    """Go's strconv.FormatFloat(v, 'e', -1, 64): the shortest exponent form, e.g. `1.5e+00`."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    for digits in range(17):
        text = f"{value:.{digits}e}"
        if float(text) == value:
            return text
    return f"{value:.17e}"


def _time(ns: int) -> str:
    return format_rfc3339(ns) if ns else ZERO_TIME


def alert_json(alert: Alert) -> dict:
    return {
        "labels": alert.labels.to_dict(),
        "annotations": dict(alert.annotations),
        "state": alert.state,
        "activeAt": _time(alert.active_at),
        "value": format_value(alert.value),
    }


def _active(rule: AlertingRule) -> list[Alert]:
    """Pending and firing alerts (resolved ones are only kept for notifications)."""
    return [a for a in rule.active.values() if a.state != INACTIVE]


def _rule_json(rule: AlertingRule | RecordingRule) -> dict:
    common = {
        "health": rule.health,
        "lastError": rule.last_error,
        "lastEvaluation": _time(rule.last_eval_ns),
        "evaluationTime": rule.eval_seconds,
    }
    if isinstance(rule, AlertingRule):
        return {
            "state": rule.state,
            "name": rule.rule.alert,
            "query": rule.rule.expr,
            "duration": rule.rule.for_ns / 1e9,
            "labels": dict(rule.rule.labels),
            "annotations": dict(rule.rule.annotations),
            "alerts": [alert_json(a) for a in _active(rule)],
            **common,
            "type": "alerting",
        }
    return {
        "name": rule.rule.record,
        "query": rule.rule.expr,
        "labels": dict(rule.rule.labels),
        **common,
        "type": "recording",
    }


def _wanted(rule: AlertingRule | RecordingRule, filters: RuleFilters) -> bool:
    if filters.type == "alert" and not isinstance(rule, AlertingRule):
        return False
    if filters.type == "record" and not isinstance(rule, RecordingRule):
        return False
    return not filters.names or rule.rule.name in filters.names


def rules_data(groups: Iterable[GroupState], filters: RuleFilters = RuleFilters()) -> dict:
    """`data` of the rules endpoint; groups ordered by file (namespace), then name."""
    rule_filtered = bool(filters.type or filters.names)
    out = []
    for group in sorted(groups, key=lambda g: (g.namespace, g.group.name)):
        if filters.files and group.namespace not in filters.files:
            continue
        if filters.groups and group.group.name not in filters.groups:
            continue
        rules = [_rule_json(r) for r in group.rules if _wanted(r, filters)]
        if rule_filtered and not rules:
            continue
        out.append(
            {
                "name": group.group.name,
                "file": group.namespace,
                "rules": rules,
                "interval": group.interval_ns / 1e9,
                "limit": group.group.limit,
                "lastEvaluation": _time(group.last_eval_ns),
                "evaluationTime": group.eval_seconds,
            }
        )
    return {"groups": out}


def alerts_data(groups: Iterable[GroupState]) -> dict:
    """`data` of the alerts endpoint: every pending or firing alert of the groups."""
    alerts = [alert_json(a) for g in groups for r in g.rules if isinstance(r, AlertingRule) for a in _active(r)]
    return {"alerts": alerts}


def merge_rules_data(parts: Iterable[dict]) -> dict:
    """Combine the answers of several rulers (each owns some groups)."""
    groups = [g for part in parts for g in part.get("groups", [])]
    return {"groups": sorted(groups, key=lambda g: (g["file"], g["name"]))}


def merge_alerts_data(parts: Iterable[dict]) -> dict:
    return {"alerts": [a for part in parts for a in part.get("alerts", [])]}
