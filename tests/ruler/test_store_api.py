"""Rule store layout and the rules API logic (list/get/set/delete, 404s, limits, filters)."""

import pytest
import yaml

from svclog.model import NotFoundError, ValidationError
from svclog.ruler.api import RuleLimits, RulesAPI
from svclog.ruler.rulefmt import parse_group
from svclog.ruler.store import decode_segment, encode_segment

from .conftest import ALERT_BODY, RECORD_BODY

UNSAFE = ["a/b", "..", ".", "with space", "ünïcödé", "%2F", "a\\b?*", "x" * 120]


@pytest.mark.parametrize("namespace", UNSAFE)
def test_store_round_trip_with_unsafe_namespaces(rule_store, namespace):
    group = parse_group(ALERT_BODY)
    rule_store.set_group("t1", namespace, group)
    assert rule_store.get_group("t1", namespace, "api-errors") == group
    assert rule_store.list_groups("t1") == {namespace: [group]}
    key = rule_store.group_key("t1", namespace, "api-errors")
    assert key.count("/") == 3 and ".." not in key.split("/")
    rule_store.delete_namespace("t1", namespace)
    assert rule_store.list_groups("t1") == {}


def test_segments_are_reversible():
    for text in UNSAFE + LONG:
        assert decode_segment(encode_segment(text)) == text
    assert decode_segment("not base64!") is None


LONG = ["n" * 200, "ü" * 400, "x" * 162, "y" * 163, "z" * 1022]


@pytest.mark.parametrize("name", LONG)
def test_long_names_are_stored_under_short_key_segments(rule_store, name):
    body = ALERT_BODY.replace("name: api-errors", f"name: {name}")
    group = parse_group(body)
    rule_store.set_group("t1", name, group)
    rule_store.set_group("t1", name + "-b", group)  # shares the first segments with `name`
    key = rule_store.group_key("t1", name, name)
    assert max(len(part.encode()) for part in key.split("/")) + len(".tmp-") + 32 <= 255
    assert rule_store.get_group("t1", name, name) == group
    assert rule_store.list_groups("t1") == {name: [group], name + "-b": [group]}
    assert rule_store.list_groups("t1", name) == {name: [group]}
    rule_store.delete_group("t1", name, name)
    assert rule_store.list_groups("t1") == {name + "-b": [group]}
    rule_store.delete_namespace("t1", name + "-b")
    assert rule_store.list_groups("t1") == {}


def test_short_names_keep_their_single_segment_keys():
    assert encode_segment("x" * 162).count("/") == 0 and encode_segment("y" * 163).count("/") == 1


def test_names_over_the_limit_are_user_errors(rule_store):
    with pytest.raises(ValidationError, match="limit: 1024 bytes"):
        rule_store.set_group("t1", "n" * 1025, parse_group(ALERT_BODY))
    with pytest.raises(ValidationError, match="limit: 1024 bytes"):
        rule_store.get_group("t1", "ns", "g" * 1025)


def test_tenants_are_isolated(rule_store):
    rule_store.set_group("a", "ns", parse_group(ALERT_BODY))
    assert rule_store.list_groups("b") == {}
    with pytest.raises(NotFoundError, match="group does not exist"):
        rule_store.get_group("b", "ns", "api-errors")


def test_api_set_get_list_delete(rule_store):
    changed = []
    api = RulesAPI(rule_store, on_change=changed.append)
    api.set_group("t", "ns-one", ALERT_BODY)
    api.set_group("t", "ns-two", RECORD_BODY)
    listed = yaml.safe_load(api.list_rules("t"))
    assert list(listed) == ["ns-one", "ns-two"]
    assert listed["ns-two"][0]["rules"][0]["record"] == "nginx:requests:rate5m"
    assert list(yaml.safe_load(api.get_namespace("t", "ns-one"))) == ["ns-one"]
    group = yaml.safe_load(api.get_group("t", "ns-two", "nginx-recording"))
    assert group == {
        "name": "nginx-recording",
        "interval": "2m",
        "rules": [
            {
                "record": "nginx:requests:rate5m",
                "expr": 'sum by (cluster) (rate({app="nginx"}[5m]))',
                "labels": {"source": "conformance"},
            }
        ],
    }
    api.delete_group("t", "ns-two", "nginx-recording")
    with pytest.raises(NotFoundError):
        api.get_group("t", "ns-two", "nginx-recording")
    api.delete_namespace("t", "ns-one")
    with pytest.raises(NotFoundError, match="no rule groups found"):
        api.list_rules("t")
    assert changed == ["t"] * 4


def test_api_update_replaces_group(rule_store):
    api = RulesAPI(rule_store)
    api.set_group("t", "ns", ALERT_BODY)
    api.set_group("t", "ns", ALERT_BODY.replace("> 1", "> 5").replace("page", "ticket"))
    text = api.get_group("t", "ns", "api-errors")
    assert "> 5" in text and "ticket" in text and "page" not in text


def test_api_404s(rule_store):
    api = RulesAPI(rule_store)
    with pytest.raises(NotFoundError, match="group does not exist"):
        api.get_group("t", "none", "nothing")
    api.delete_group("t", "none", "nothing")  # idempotent, as the reference's S3 and file stores
    with pytest.raises(NotFoundError, match="group namespace does not exist"):
        api.delete_namespace("t", "none")
    with pytest.raises(NotFoundError):
        api.get_namespace("t", "none")


def test_api_rejects_invalid_bodies_without_storing(rule_store):
    api = RulesAPI(rule_store)
    with pytest.raises(ValidationError, match="unable to decoded rule group"):
        api.set_group("t", "ns", "name: [unclosed\nrules: {")
    with pytest.raises(ValidationError, match="could not parse expression"):
        api.set_group("t", "ns", ALERT_BODY.replace("> 1", "> > 1"))
    assert rule_store.list_groups("t") == {}


def test_api_limits(rule_store):
    api = RulesAPI(
        rule_store, limits=lambda tenant: RuleLimits(max_rules_per_rule_group=1, max_rule_groups_per_tenant=1)
    )
    api.set_group("t", "ns", ALERT_BODY)
    api.set_group("t", "ns", ALERT_BODY)  # replacing the same group is within the limit
    with pytest.raises(ValidationError, match="rule groups limit"):
        api.set_group("t", "ns", RECORD_BODY)
    two_rules = ALERT_BODY + '  - alert: Other\n    expr: sum(rate({a="b"}[1m])) > 0\n'
    with pytest.raises(ValidationError, match="rules per rule group limit"):
        api.set_group("t", "ns", two_rules)


def test_api_label_filter(rule_store):
    api = RulesAPI(rule_store)
    api.set_group("t", "a", ALERT_BODY)
    api.set_group("t", "b", RECORD_BODY)
    assert list(yaml.safe_load(api.list_rules("t", labels="source:conformance"))) == ["b"]
    with pytest.raises(NotFoundError):
        api.list_rules("t", labels="severity:none")
    with pytest.raises(ValidationError):
        api.list_rules("t", labels="novalue")


def test_user_errors_survive_pickling():
    """They travel from the ruler actor to the HTTP layer."""
    import pickle

    from svclog.ruler.api import NoRuleGroups
    from svclog.ruler.store import GroupNotFound, NamespaceNotFound

    for err in (GroupNotFound(), NamespaceNotFound(), NoRuleGroups(), ValidationError("x")):
        again = pickle.loads(pickle.dumps(err))
        assert type(again) is type(err) and str(again) == str(err) and again.status == err.status
