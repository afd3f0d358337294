"""The component lifecycle machine and how /services and /ready derive from it."""

from __future__ import annotations

import pytest

from svclog.services import (
    TRANSITIONS,
    InvalidTransition,
    Service,
    ServiceSet,
    State,
    parse_state,
    readiness,
    render_services,
)


def test_a_service_walks_new_starting_running_stopping_terminated():
    s = Service("ingester-0")
    assert s.state is State.NEW
    s.start()
    s.running()
    assert s.is_running
    s.stop()
    assert s.state is State.STOPPING
    s.terminated()
    assert s.state is State.TERMINATED and s.is_terminal


@pytest.mark.parametrize("origin", [State.STARTING, State.RUNNING, State.STOPPING])
def test_failure_is_allowed_from_starting_running_and_stopping(origin):
    s = Service("x", state=origin)
    s.fail("disk full")
    assert s.state is State.FAILED and s.failure == "disk full"


@pytest.mark.parametrize(
    "origin,target",
    [
        (State.NEW, State.RUNNING),
        (State.RUNNING, State.STARTING),
        (State.TERMINATED, State.STARTING),
        (State.FAILED, State.RUNNING),
        (State.STOPPING, State.RUNNING),
        (State.NEW, State.FAILED),
    ],
)
def test_transitions_outside_the_table_are_refused(origin, target):
    with pytest.raises(InvalidTransition):
        Service("x", state=origin).transition(target)


def test_terminal_states_have_no_way_out():
    assert TRANSITIONS[State.TERMINATED] == TRANSITIONS[State.FAILED] == frozenset()


def test_stopping_a_service_that_never_started_terminates_it():
    s = Service("x")
    s.stop()
    assert s.state is State.TERMINATED


def test_observe_walks_legal_paths_to_the_reported_state():
    services = ServiceSet(["ring"])
    assert services.observe("ring", State.RUNNING).state is State.RUNNING
    assert services.observe("ring", State.FAILED, "actor died").failure == "actor died"
    # Ray restarted the failed actor: a new incarnation, walked from New again
    assert services.observe("ring", State.RUNNING).state is State.RUNNING
    assert services.observe("new-one", State.STARTING).state is State.STARTING
    assert services.states() == [("ring", State.RUNNING), ("new-one", State.STARTING)]


def test_retain_drops_components_no_longer_hosted():
    services = ServiceSet(["a", "b"])
    services.retain({"b"})
    assert [name for name, _ in services.states()] == ["b"]


def test_services_text_lists_each_component_and_state():
    assert render_services([("ring", State.RUNNING), ("ingester-0", State.STARTING)]) == (
        "ring => Running\ningester-0 => Starting\n"
    )


def test_ready_only_when_every_component_runs():
    assert readiness([("a", State.RUNNING), ("b", State.RUNNING)]) == (True, "ready\n")
    ok, body = readiness([("a", State.RUNNING), ("b", State.STARTING), ("c", State.FAILED)])
    assert not ok and "b (Starting)" in body and "c (Failed)" in body and "a (" not in body
    assert readiness([])[0] is False


def test_parse_state_is_case_insensitive():
    assert parse_state("running") is State.RUNNING
    with pytest.raises(ValueError):
        parse_state("Sleeping")
