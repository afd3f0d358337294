"""One loaded rule group of one tenant: its schedule and one evaluation pass.

Evaluation times are aligned to the group's interval plus a stable per-group offset
(from a hash of tenant, namespace and name), so many groups with the same interval
spread over it instead of all querying at once, and every ruler agrees on the slots.
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field

from svclog.model import Labels, format_rfc3339
from svclog.ruler.protocols import InstantQuerier
from svclog.ruler.rulefmt import RuleGroup
from svclog.ruler.rules import AlertingRule, Context, RuleEvalError, make_rule
from svclog.ruler.sharding import group_fingerprint


@dataclass
class EvalOutcome:
    alerts: list[dict] = field(default_factory=list)  # Alertmanager v2 postableAlerts to send
    samples: list[tuple[Labels, float, int]] = field(default_factory=list)  # recorded series


@dataclass(frozen=True)
class EvalSettings:
    resend_delay_ns: int = 60 * 1_000_000_000
    evaluation_delay_ns: int = 0  # query this far in the past (data still arriving)
    generator_url: str = ""


class GroupState:
    def __init__(self, tenant: str, namespace: str, group: RuleGroup, interval_ns: int, context: Context):
        self.tenant = tenant
        self.namespace = namespace
        self.group = group
        self.interval_ns = interval_ns
        self.rules = [make_rule(rule, context) for rule in group.rules]
        # Whole milliseconds: sample timestamps leave as milliseconds (remote-write).
        interval_ms = max(1, interval_ns // 1_000_000)
        self.offset_ns = group_fingerprint(tenant, namespace, group.name) % interval_ms * 1_000_000
        self.last_eval_ns = 0
        self.eval_seconds = 0.0
        self.next_eval_ns = 0

    @property
    def key(self) -> tuple[str, str, str]:
        return self.tenant, self.namespace, self.group.name

    def schedule_after(self, now: int) -> None:
        """The first aligned slot strictly after `now`."""
        base = now - self.offset_ns
        self.next_eval_ns = (base // self.interval_ns + 1) * self.interval_ns + self.offset_ns

    def adopt(self, previous: GroupState) -> None:
        """Carry state over from the same group before a reload (matched by rule kind, name and expr)."""
        old = {(type(r), r.rule.name, r.rule.expr): r for r in previous.rules}
        for rule in self.rules:
            match = old.pop((type(rule), rule.rule.name, rule.rule.expr), None)
            if match is not None:
                rule.adopt(match)  # type: ignore[arg-type]
        self.last_eval_ns, self.eval_seconds = previous.last_eval_ns, previous.eval_seconds
        if previous.interval_ns == self.interval_ns:
            self.next_eval_ns = previous.next_eval_ns

    def evaluate(
        self, now: int, querier: InstantQuerier, settings: EvalSettings, lock: AbstractContextManager | None = None
    ) -> EvalOutcome:
        """Evaluate every rule in order at `now`; errors are kept per rule and do not stop the group.

        Queries run without `lock`; applying their results to the rule states holds it.
        """
        lock = lock or nullcontext()
        outcome = EvalOutcome()
        began = time.perf_counter()
        query_at = now - settings.evaluation_delay_ns
        for rule in self.rules:
            rule_began = time.perf_counter()
            vector, error = [], ""
            try:
                vector = querier.instant(self.tenant, rule.rule.expr, query_at)
            except Exception as err:  # noqa: BLE001 - a failing query must not stop the other rules
                error = str(err) or type(err).__name__
            with lock:
                if not error:
                    try:
                        if isinstance(rule, AlertingRule):
                            rule.apply(vector, now, self.group.limit)
                        else:
                            outcome.samples.extend(
                                (labels, value, query_at) for labels, value in rule.apply(vector, self.group.limit)
                            )
                    except RuleEvalError as err:
                        error = str(err)
                rule.record_result(now, time.perf_counter() - rule_began, error)
                if isinstance(rule, AlertingRule):
                    outcome.alerts.extend(self._postable(rule, now, settings))
        self.last_eval_ns, self.eval_seconds = now, time.perf_counter() - began
        return outcome

    def _postable(self, rule: AlertingRule, now: int, settings: EvalSettings) -> list[dict]:
        out = []
        for alert in rule.due_notifications(now, settings.resend_delay_ns, self.interval_ns):
            ends = alert.resolved_at or alert.valid_until
            item = {
                "labels": alert.labels.to_dict(),
                "annotations": dict(alert.annotations),
                "startsAt": format_rfc3339(alert.fired_at or alert.active_at),
                "endsAt": format_rfc3339(ends),
            }
            if settings.generator_url:
                item["generatorURL"] = settings.generator_url
            out.append(item)
        return out
