"""The ruler: keeps the owned rule groups loaded, evaluates each when due, delivers the results.

`tick(now)` is the whole scheduler (the actor calls it from its loop; tests call it
with a fake clock): it re-reads the store every `poll_interval` and at once when the
ruler ring's healthy members change (checked every `ring_check_interval`, so groups move
soon after a ruler joins or leaves), evaluates the groups whose slot has come, sends due
alerts to the Alertmanager and recorded samples to remote-write. Queries run outside the lock; applying results and the compat views
take it, so a slow query never blocks `/compat/api/v1/rules`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from svclog.model import NS
from svclog.ring.ring import Ring
from svclog.ruler import compat
from svclog.ruler.group import EvalSettings, GroupState
from svclog.ruler.protocols import AlertSender, InstantQuerier, SampleWriter
from svclog.ruler.rulefmt import effective_interval
from svclog.ruler.rules import Context
from svclog.ruler.sharding import owns_group
from svclog.ruler.store import RuleStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RulerSettings:
    instance_id: str = "ruler"
    evaluation_interval_ns: int = 60 * NS
    poll_interval_ns: int = 60 * NS
    ring_check_interval_ns: int = 5 * NS
    resend_delay_ns: int = 60 * NS
    evaluation_delay_ns: int = 0
    external_labels: tuple[tuple[str, str], ...] = ()
    external_url: str = ""
    enabled_tenants: frozenset[str] = frozenset()  # empty = all
    disabled_tenants: frozenset[str] = frozenset()


@dataclass
class RulerStats:
    evaluations: int = 0
    failed_rules: int = 0
    alerts_sent: int = 0
    alert_send_failures: int = 0
    samples_written: int = 0
    sample_write_failures: int = 0
    last_errors: list[str] = field(default_factory=list)

    def note(self, message: str) -> None:
        self.last_errors = [*self.last_errors[-9:], message]


class Ruler:
    def __init__(
        self,
        store: RuleStore,
        querier: InstantQuerier,
        settings: RulerSettings,
        alerts: AlertSender | None = None,
        samples: SampleWriter | None = None,
        ring: Callable[[], Ring | None] = lambda: None,
    ):
        self.store = store
        self.querier = querier
        self.settings = settings
        self.alerts = alerts
        self.samples = samples
        self.ring = ring
        self.stats = RulerStats()
        self._groups: dict[tuple[str, str, str], GroupState] = {}
        self._lock = threading.RLock()
        self._last_sync_ns: int | None = None
        self._last_ring_check_ns = 0
        self._ring_members: frozenset | None = None  # the healthy members the loaded groups follow
        self._context = Context(settings.external_labels, settings.external_url)
        self._eval = EvalSettings(settings.resend_delay_ns, settings.evaluation_delay_ns, settings.external_url)

    # ------------------------------------------------------------ loading

    def _tenant_enabled(self, tenant: str) -> bool:
        s = self.settings
        return (not s.enabled_tenants or tenant in s.enabled_tenants) and tenant not in s.disabled_tenants

    def sync(self, now: int, tenant: str | None = None) -> None:
        """Reload groups from the store (all tenants, or one after an API change)."""
        tenants = [tenant] if tenant else self.store.list_tenants()
        ring = self.ring()
        if tenant is None:
            self._ring_members = _membership(ring)
        loaded: dict[tuple[str, str, str], GroupState] = {}
        for name in tenants:
            if not self._tenant_enabled(name):
                continue
            for namespace, groups in self.store.list_groups(name).items():
                for group in groups:
                    if owns_group(ring, self.settings.instance_id, name, namespace, group.name):
                        interval = effective_interval(group, self.settings.evaluation_interval_ns)
                        state = GroupState(name, namespace, group, interval, self._context)
                        loaded[state.key] = state
        with self._lock:
            kept = {k: g for k, g in self._groups.items() if tenant and k[0] != tenant}
            for key, state in loaded.items():
                previous = self._groups.get(key)
                if previous is not None:
                    state.adopt(previous)
                if not state.next_eval_ns:
                    state.schedule_after(now)
                kept[key] = state
            self._groups = kept
            if tenant is None:
                self._last_sync_ns = now

    # ------------------------------------------------------------ evaluation

    def _ring_changed(self, now: int) -> bool:
        if now - self._last_ring_check_ns < self.settings.ring_check_interval_ns:
            return False
        self._last_ring_check_ns = now
        try:
            return _membership(self.ring()) != self._ring_members
        except Exception as err:  # noqa: BLE001 - ring unreachable: keep the groups we have
            log.warning("ruler: reading the ruler ring failed: %s", err)
            return False

    def tick(self, now: int) -> int:
        """Evaluate every group whose slot has come; returns how many were evaluated."""
        if (
            self._last_sync_ns is None
            or now - self._last_sync_ns >= self.settings.poll_interval_ns
            or self._ring_changed(now)
        ):
            try:
                self.sync(now)
            except Exception as err:  # noqa: BLE001 - store unreachable: keep evaluating what is loaded
                log.warning("ruler: reloading rule groups failed: %s", err)
                self.stats.note(f"sync: {err}")
                self._last_sync_ns = now
        with self._lock:
            due = [g for g in self._groups.values() if g.next_eval_ns <= now]
        for group in due:
            missed = (now - group.next_eval_ns) // group.interval_ns  # slots skipped while busy or down
            self._evaluate(group, group.next_eval_ns + missed * group.interval_ns)
            with self._lock:
                group.schedule_after(now)
        return len(due)

    def _evaluate(self, group: GroupState, at: int) -> None:
        outcome = group.evaluate(at, self.querier, self._eval, self._lock)
        self.stats.evaluations += 1
        self.stats.failed_rules += sum(1 for r in group.rules if r.last_error)
        if outcome.alerts and self.alerts is not None:
            try:
                self.alerts.send(group.tenant, outcome.alerts)
                self.stats.alerts_sent += len(outcome.alerts)
            except Exception as err:  # noqa: BLE001 - delivery failures are counted, never fatal
                self.stats.alert_send_failures += 1
                self.stats.note(f"alertmanager: {err}")
                log.warning("ruler: sending %d alerts failed: %s", len(outcome.alerts), err)
        if outcome.samples and self.samples is not None:
            try:
                self.samples.write(group.tenant, outcome.samples)
                self.stats.samples_written += len(outcome.samples)
            except Exception as err:  # noqa: BLE001 - delivery failures are counted, never fatal
                self.stats.sample_write_failures += 1
                self.stats.note(f"remote-write: {err}")
                log.warning("ruler: remote-write of %d samples failed: %s", len(outcome.samples), err)

    def next_due_ns(self) -> int | None:
        with self._lock:
            return min((g.next_eval_ns for g in self._groups.values()), default=None)

    # ------------------------------------------------------------ views

    def groups(self, tenant: str) -> list[GroupState]:
        with self._lock:
            return sorted(
                (g for g in self._groups.values() if g.tenant == tenant), key=lambda g: (g.namespace, g.group.name)
            )

    def compat_rules(self, tenant: str, filters: compat.RuleFilters) -> dict:
        with self._lock:
            return compat.rules_data(self.groups(tenant), filters)

    def compat_alerts(self, tenant: str) -> dict:
        with self._lock:
            return compat.alerts_data(self.groups(tenant))


def _membership(ring: Ring | None) -> frozenset | None:
    """What group ownership depends on: the members and their tokens."""
    return None if ring is None else frozenset((m.id, m.tokens) for m in ring.members.values())
