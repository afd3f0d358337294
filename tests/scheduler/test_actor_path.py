import pytest
from starlette.datastructures import Headers

from svclog.scheduler import QueueDepthError, actor_path_from_headers, parse_actor_path
from svclog.scheduler.actor_path import limit_depth


@pytest.mark.parametrize(
    "header, path",
    [
        (None, ()),
        ("", ()),
        ("dashboards", ("dashboards",)),
        ("explore|carol", ("explore", "carol")),
        ("org|team-b|bob", ("org", "team-b", "bob")),
        ("a||b", ("a", "", "b")),  # split verbatim, as the reference does
        (" a |b", (" a ", "b")),
    ],
)
def test_parse_actor_path(header, path):
    assert parse_actor_path(header) == path


def test_header_and_its_loki_alias_case_insensitive():
    assert actor_path_from_headers(Headers({"x-svc-actor-path": "a|b"})) == ("a", "b")
    assert actor_path_from_headers(Headers({"X-Loki-Actor-Path": "c"})) == ("c",)
    both = Headers({"X-Svc-Actor-Path": "svc", "X-Loki-Actor-Path": "loki"})
    assert actor_path_from_headers(both) == ("svc",)
    assert actor_path_from_headers(Headers({})) == ()


def test_depth_limit_refuses_deeper_paths():
    assert limit_depth(("a", "b", "c"), 3) == ("a", "b", "c")
    with pytest.raises(QueueDepthError) as err:
        limit_depth(("a", "b", "c", "d"), 3)
    assert err.value.status == 400
    assert "'a|b|c|d'" in str(err.value) and "4 levels" in str(err.value) and "only 3" in str(err.value)


def test_zero_levels_disables_hierarchy():
    assert limit_depth(("a", "b"), 0) == ()
