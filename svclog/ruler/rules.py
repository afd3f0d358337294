"""Loaded rules with their evaluation state.

An alerting rule keeps one `Alert` per label set the query returned:
new -> pending (`active_at`) -> firing once it stayed active for `for` (at once when
`for` is 0) -> inactive (`resolved_at`) when the series is gone. Pending alerts that
disappear are dropped; resolved ones are kept for `RESOLVED_RETENTION_NS` so that the
resolution reaches the Alertmanager. A recording rule turns its vector into samples of
the series `record{labels}`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from svclog.model import NS, Labels
from svclog.ruler.rulefmt import Rule
from svclog.ruler.template import TemplateData, TemplateError, expand

INACTIVE, PENDING, FIRING = "inactive", "pending", "firing"
HEALTH_UNKNOWN, HEALTH_OK, HEALTH_ERR = "unknown", "ok", "err"
RESOLVED_RETENTION_NS = 15 * 60 * NS
_STATE_ORDER = {INACTIVE: 0, PENDING: 1, FIRING: 2}

Vector = list[tuple[dict[str, str], float]]


class RuleEvalError(Exception):
    """A rule could not be applied to its query result (duplicate series, limit)."""


@dataclass
class Alert:
    labels: Labels
    annotations: dict[str, str]
    value: float
    active_at: int
    state: str = PENDING
    fired_at: int = 0
    resolved_at: int = 0
    last_sent_at: int = 0
    valid_until: int = 0

    def needs_sending(self, now: int, resend_delay_ns: int) -> bool:
        if self.state == PENDING:
            return False
        if self.resolved_at > self.last_sent_at:
            return True
        return self.last_sent_at + resend_delay_ns < now


@dataclass(frozen=True)
class Context:
    """What templates may read besides the sample itself."""

    external_labels: tuple[tuple[str, str], ...] = ()
    external_url: str = ""


def _expand_all(items: tuple[tuple[str, str], ...], data: TemplateData) -> dict[str, str]:
    out = {}
    for name, text in items:
        try:
            out[name] = expand(text, data)
        except TemplateError as err:  # shown in place of the value, as the reference does
            out[name] = f"<error expanding template: {err}>"
    return out


@dataclass
class RuleState:
    """Health and timing shared by both rule kinds."""

    rule: Rule
    context: Context = field(default_factory=Context)
    health: str = HEALTH_UNKNOWN
    last_error: str = ""
    last_eval_ns: int = 0
    eval_seconds: float = 0.0

    def record_result(self, at_ns: int, seconds: float, error: str = "") -> None:
        self.last_eval_ns, self.eval_seconds = at_ns, seconds
        self.health, self.last_error = (HEALTH_ERR, error) if error else (HEALTH_OK, "")


@dataclass
class AlertingRule(RuleState):
    active: dict[Labels, Alert] = field(default_factory=dict)

    @property
    def state(self) -> str:
        return max((a.state for a in self.active.values()), key=_STATE_ORDER.__getitem__, default=INACTIVE)

    def _alert_for(self, labels: dict[str, str], value: float, now: int) -> Alert:
        data = TemplateData(labels, value, dict(self.context.external_labels), self.context.external_url)
        merged = {k: v for k, v in labels.items() if k != "__name__"}
        merged.update(_expand_all(self.rule.labels, data))
        merged["alertname"] = self.rule.alert
        return Alert(Labels(merged.items()), _expand_all(self.rule.annotations, data), value, now)

    def apply(self, vector: Vector, now: int, limit: int = 0) -> None:
        """Advance the state machine with the query result at `now`."""
        seen: dict[Labels, Alert] = {}
        for labels, value in vector:
            alert = self._alert_for(labels, value, now)
            if alert.labels in seen:
                raise RuleEvalError("vector contains metrics with the same labelset after applying alert labels")
            seen[alert.labels] = alert
        if 0 < limit < len(seen):
            self.active.clear()
            raise RuleEvalError(f"exceeded limit of {limit} with {len(seen)} alerts")
        for key, alert in seen.items():
            current = self.active.get(key)
            if current is not None and current.state != INACTIVE:
                current.value, current.annotations = alert.value, alert.annotations
            else:
                self.active[key] = alert
        for key, alert in list(self.active.items()):
            if key not in seen:
                if alert.state == PENDING or (alert.resolved_at and now - alert.resolved_at > RESOLVED_RETENTION_NS):
                    del self.active[key]
                elif alert.state != INACTIVE:
                    alert.state, alert.resolved_at = INACTIVE, now
            elif alert.state == PENDING and now - alert.active_at >= self.rule.for_ns:
                alert.state, alert.fired_at = FIRING, now

    def due_notifications(self, now: int, resend_delay_ns: int, interval_ns: int) -> list[Alert]:
        """Alerts to send now; marks them sent (they stay valid for four intervals)."""
        due = []
        for alert in self.active.values():
            if alert.needs_sending(now, resend_delay_ns):
                alert.last_sent_at = now
                alert.valid_until = now + 4 * max(resend_delay_ns, interval_ns)
                due.append(alert)
        return due

    def adopt(self, previous: AlertingRule) -> None:
        """Keep alert state across a reload of an unchanged rule."""
        self.active = previous.active
        self.health, self.last_error = previous.health, previous.last_error
        self.last_eval_ns, self.eval_seconds = previous.last_eval_ns, previous.eval_seconds


@dataclass
class RecordingRule(RuleState):
    def apply(self, vector: Vector, limit: int = 0) -> list[tuple[Labels, float]]:
        out: dict[Labels, float] = {}
        for labels, value in vector:
            merged = dict(labels)
            merged.update(self.rule.labels)
            merged["__name__"] = self.rule.record
            key = Labels(merged.items())
            if key in out:
                raise RuleEvalError("vector contains metrics with the same labelset after applying rule labels")
            out[key] = value
        if 0 < limit < len(out):
            raise RuleEvalError(f"exceeded limit of {limit} with {len(out)} series")
        return list(out.items())

    def adopt(self, previous: RecordingRule) -> None:
        self.health, self.last_error = previous.health, previous.last_error
        self.last_eval_ns, self.eval_seconds = previous.last_eval_ns, previous.eval_seconds


def make_rule(rule: Rule, context: Context) -> AlertingRule | RecordingRule:
    return AlertingRule(rule, context) if rule.is_alert else RecordingRule(rule, context)
