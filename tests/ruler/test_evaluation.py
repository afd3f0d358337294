"""Evaluation: scheduling, the alert state machine, recording rules, compat views, sharding."""

import itertools

import pytest

from svclog.model import NS, Labels, ValidationError, format_rfc3339
from svclog.ring.ring import Ring
from svclog.ruler.api import RulesAPI
from svclog.ruler.compat import RuleFilters, alerts_data, format_value, parse_filters, rules_data
from svclog.ruler.protocols import vector_from_query_data
from svclog.ruler.ruler import Ruler, RulerSettings
from svclog.ruler.sharding import group_fingerprint, healthy_ring, owner_of, owns_group

from .conftest import ALERT_BODY, RECORD_BODY

T0 = 1_800_000_000 * NS
MIN = 60 * NS


class FakeQuerier:
    """Answers every query from `self.vector`; records what was asked."""

    def __init__(self):
        self.vector: list = []
        self.calls: list = []
        self.error: Exception | None = None

    def instant(self, tenant, query, at_ns):
        self.calls.append((tenant, query, at_ns))
        if self.error is not None:
            raise self.error
        return list(self.vector)


class Collect:
    def __init__(self):
        self.items = []

    def send(self, tenant, alerts):
        self.items.append((tenant, alerts))

    def write(self, tenant, samples):
        self.items.append((tenant, samples))


@pytest.fixture
def setup(rule_store):
    querier, alerts, samples = FakeQuerier(), Collect(), Collect()
    ruler = Ruler(
        rule_store, querier, RulerSettings(resend_delay_ns=MIN, external_labels=(("cluster", "eu"),)), alerts, samples
    )
    api = RulesAPI(rule_store, on_change=lambda tenant: ruler.sync(T0, tenant))
    return ruler, api, querier, alerts, samples


def _run(ruler, start, minutes):
    """Tick once per second of fake time for `minutes`; returns the number of evaluations."""
    count = 0
    for second in range(minutes * 60):
        count += ruler.tick(start + second * NS)
    return count


def _rule(ruler, tenant="t"):
    return ruler.groups(tenant)[0].rules[0]


def test_group_is_evaluated_once_per_interval(setup):
    ruler, api, querier, *_ = setup
    api.set_group("t", "ns", ALERT_BODY)
    assert _run(ruler, T0, 10) in (9, 10)
    times = [at for _, _, at in querier.calls]
    assert all(b - a == MIN for a, b in itertools.pairwise(times))
    assert {t for t, _, _ in querier.calls} == {"t"}


def test_alert_goes_pending_then_firing_then_resolved(setup):
    ruler, api, querier, alerts, _ = setup
    api.set_group("t", "ns", ALERT_BODY)  # for: 2m
    first = ruler.groups("t")[0].next_eval_ns
    querier.vector = [({"app": "api"}, 7.5)]
    ruler.tick(first)
    assert _rule(ruler).state == "pending" and not alerts.items
    ruler.tick(first + MIN)
    assert _rule(ruler).state == "pending"
    ruler.tick(first + 2 * MIN)
    assert _rule(ruler).state == "firing"
    [(tenant, [sent])] = alerts.items
    assert tenant == "t"
    assert sent["labels"] == {"alertname": "HighApiErrorRate", "app": "api", "severity": "page"}
    assert sent["annotations"] == {"summary": "api error rate is 7.5"}
    assert sent["startsAt"] == format_rfc3339(first + 2 * MIN) < sent["endsAt"]
    ruler.tick(first + 3 * MIN)  # still firing; the resend delay (1m) has not strictly passed
    assert len(alerts.items) == 1
    ruler.tick(first + 4 * MIN)
    assert len(alerts.items) == 2  # re-sent
    querier.vector = []
    ruler.tick(first + 5 * MIN)
    assert _rule(ruler).state == "inactive"
    resolved = alerts.items[-1][1][0]
    assert resolved["endsAt"] == format_rfc3339(first + 5 * MIN)
    assert alerts_data(ruler.groups("t")) == {"alerts": []}
    ruler.tick(first + 21 * MIN)  # kept 15 minutes after resolution, then forgotten
    assert _rule(ruler).active == {}


def test_pending_alert_that_disappears_is_dropped(setup):
    ruler, api, querier, alerts, _ = setup
    api.set_group("t", "ns", ALERT_BODY)
    first = ruler.groups("t")[0].next_eval_ns
    querier.vector = [({"app": "api"}, 2.0)]
    ruler.tick(first)
    querier.vector = []
    ruler.tick(first + MIN)
    assert _rule(ruler).active == {} and not alerts.items


def test_for_zero_fires_at_once_and_one_alert_per_series(setup):
    ruler, api, querier, alerts, _ = setup
    api.set_group("t", "ns", ALERT_BODY.replace("for: 2m", "for: 0s"))
    querier.vector = [({"app": "a"}, 1.0), ({"app": "b"}, 2.0)]
    ruler.tick(ruler.groups("t")[0].next_eval_ns)
    assert {a.state for a in _rule(ruler).active.values()} == {"firing"}
    assert len(alerts.items[0][1]) == 2


def test_duplicate_series_after_labels_is_a_rule_error(setup):
    ruler, api, querier, *_ = setup
    api.set_group("t", "ns", ALERT_BODY.replace("severity: page", "app: fixed"))
    querier.vector = [({"app": "a"}, 1.0), ({"app": "b"}, 2.0)]
    ruler.tick(ruler.groups("t")[0].next_eval_ns)
    rule = _rule(ruler)
    assert rule.health == "err" and "same labelset" in rule.last_error


def test_query_errors_are_kept_per_rule(setup):
    ruler, api, querier, *_ = setup
    api.set_group("t", "ns", ALERT_BODY)
    querier.error = ValidationError("boom")
    ruler.tick(ruler.groups("t")[0].next_eval_ns)
    rule = _rule(ruler)
    assert (rule.health, rule.last_error) == ("err", "boom")
    assert ruler.stats.failed_rules == 1


def test_recording_rule_writes_samples(setup):
    ruler, api, querier, _, samples = setup
    api.set_group("t", "ns", RECORD_BODY)
    querier.vector = [({"cluster": "c1"}, 4.0), ({"cluster": "c2"}, 0.5)]
    at = ruler.groups("t")[0].next_eval_ns
    ruler.tick(at)
    [(tenant, written)] = samples.items
    assert tenant == "t"
    assert sorted(written) == [
        (Labels({"__name__": "nginx:requests:rate5m", "cluster": "c1", "source": "conformance"}.items()), 4.0, at),
        (Labels({"__name__": "nginx:requests:rate5m", "cluster": "c2", "source": "conformance"}.items()), 0.5, at),
    ]


def test_reload_keeps_alert_state_of_unchanged_rules(setup):
    ruler, api, querier, *_ = setup
    api.set_group("t", "ns", ALERT_BODY)
    querier.vector = [({"app": "api"}, 1.0)]
    ruler.tick(ruler.groups("t")[0].next_eval_ns)
    ruler.sync(T0)
    assert _rule(ruler).state == "pending"
    api.delete_namespace("t", "ns")
    assert ruler.groups("t") == []


def test_compat_views(setup):
    ruler, api, querier, *_ = setup
    api.set_group("t", "alerts", ALERT_BODY)
    api.set_group("t", "records", RECORD_BODY)
    empty = rules_data(ruler.groups("t"))
    assert [g["file"] for g in empty["groups"]] == ["alerts", "records"]
    assert empty["groups"][0]["lastEvaluation"] == "0001-01-01T00:00:00Z"
    assert empty["groups"][0]["rules"][0]["health"] == "unknown"
    querier.vector = [({"app": "api"}, 1.5)]
    for group in ruler.groups("t"):
        ruler.tick(group.next_eval_ns)
    data = rules_data(ruler.groups("t"))
    alerting = data["groups"][0]["rules"][0]
    assert alerting["type"] == "alerting" and alerting["state"] == "pending" and alerting["duration"] == 120
    assert alerting["alerts"][0]["value"] == "1.5e+00"
    assert data["groups"][1]["rules"][0]["type"] == "recording"
    only_records = rules_data(ruler.groups("t"), parse_filters("record"))
    assert [g["name"] for g in only_records["groups"]] == ["nginx-recording"]
    by_name = rules_data(ruler.groups("t"), RuleFilters(names=frozenset({"HighApiErrorRate"})))
    assert [g["file"] for g in by_name["groups"]] == ["alerts"]
    by_file = rules_data(ruler.groups("t"), RuleFilters(files=frozenset({"records"})))
    assert [g["file"] for g in by_file["groups"]] == ["records"]
    by_group = rules_data(ruler.groups("t"), RuleFilters(groups=frozenset({"nope"})))
    assert by_group == {"groups": []}
    [alert] = alerts_data(ruler.groups("t"))["alerts"]
    assert alert["state"] == "pending" and alert["labels"]["alertname"] == "HighApiErrorRate"
    with pytest.raises(ValidationError, match="not supported value"):
        parse_filters("bogus")


def test_format_value_like_go():
    assert [format_value(v) for v in (1.5, 0.0, 100.0, 1 / 3, float("nan"), float("-inf"))] == [
        "1.5e+00",
        "0e+00",
        "1e+02",
        "3.333333333333333e-01",
        "NaN",
        "-Inf",
    ]


def test_vector_from_query_data():
    vector = {"resultType": "vector", "result": [{"metric": {"a": "b"}, "value": [1.0, "2.5"]}]}
    assert vector_from_query_data(vector) == [({"a": "b"}, 2.5)]
    assert vector_from_query_data({"resultType": "scalar", "result": [1.0, "+Inf"]}) == [({}, float("inf"))]
    with pytest.raises(ValueError):
        vector_from_query_data({"resultType": "streams", "result": []})


def test_disabled_tenants_are_not_evaluated(rule_store):
    RulesAPI(rule_store).set_group("off", "ns", ALERT_BODY)
    ruler = Ruler(rule_store, FakeQuerier(), RulerSettings(disabled_tenants=frozenset({"off"})))
    ruler.sync(T0)
    assert ruler.groups("off") == []


# ---------------------------------------------------------------- sharding


def _ring(*members):
    ring = Ring()
    for member in members:
        ring.register(member, member, node=member, num_tokens=64)
    return ring


def test_every_group_has_exactly_one_owner():
    ring = _ring("r1", "r2", "r3")
    keys = [("t", "ns", f"g{i}") for i in range(60)]
    for key in keys:
        assert sum(owns_group(ring, m, *key) for m in ("r1", "r2", "r3")) == 1
    assert len({owner_of(ring, *key) for key in keys}) == 3  # spread over all members


def test_groups_move_when_a_member_leaves():
    ring = _ring("r1", "r2")
    smaller = _ring("r1")
    assert all(owns_group(smaller, "r1", "t", "ns", f"g{i}") for i in range(20))
    assert owns_group(None, "anyone", "t", "ns", "g")
    stale = _ring("r1", "r2")
    stale.members["r2"] = stale.members["r2"].__class__(**{**vars(stale.members["r2"]), "heartbeat_ns": 1})
    assert set(healthy_ring(stale).members) == {"r1"}
    assert ring.members.keys() == {"r1", "r2"}


def test_group_fingerprint_separates_fields():
    assert group_fingerprint("a", "bc", "d") != group_fingerprint("ab", "c", "d")


def test_ruler_evaluates_only_owned_groups(rule_store):
    api = RulesAPI(rule_store)
    for i in range(12):
        api.set_group("t", "ns", ALERT_BODY.replace("api-errors", f"g{i}"))
    ring = _ring("r1", "r2")
    rulers = [Ruler(rule_store, FakeQuerier(), RulerSettings(instance_id=m), ring=lambda: ring) for m in ("r1", "r2")]
    for ruler in rulers:
        ruler.sync(T0)
    names = [{g.group.name for g in r.groups("t")} for r in rulers]
    assert names[0].isdisjoint(names[1]) and len(names[0] | names[1]) == 12
