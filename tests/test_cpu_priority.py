"""Long sub-queries run at a lower CPU priority, only while they run, and so does the work they hand to helpers."""

from __future__ import annotations

import os
import threading
import time

import pytest

from svclog import cpu_priority as priority
from svclog.cpu_priority import LongWorkPriority


def _niceness() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def _in_thread(fn):
    """Run fn on a fresh thread (its niceness changes must not outlive the test) and return its result."""
    out: list = []
    thread = threading.Thread(target=lambda: out.append(fn()))
    thread.start()
    thread.join()
    return out[0]


def test_a_long_block_is_lowered_after_the_delay_and_raised_back():
    if not priority.can_restore_priority():
        # where priorities cannot be raised back nothing is lowered (checked below with enabled=False)
        assert LongWorkPriority().enabled is False
        return

    def run():
        work = LongWorkPriority(after_s=0.02, niceness=7)
        base = _niceness()
        with work.lowered_when_long():
            at_start = _niceness()
            time.sleep(0.2)
            late = _niceness()
        return base, at_start, late, _niceness()

    base, at_start, late, after = _in_thread(run)
    assert at_start == base and late == max(base, 7) and after == base


def test_a_short_block_keeps_its_priority_and_the_timer_never_fires_late():
    def run():
        work = LongWorkPriority(after_s=0.05, niceness=9, enabled=priority.can_restore_priority())
        base = _niceness()
        for _ in range(20):
            with work.lowered_when_long():
                pass
        time.sleep(0.15)  # past every cancelled timer's delay
        return base, _niceness()

    base, after = _in_thread(run)
    assert after == base


def test_disabled_work_is_never_lowered():
    def run():
        work = LongWorkPriority(after_s=0.0, niceness=9, enabled=False)
        base = _niceness()
        with work.lowered_when_long():
            time.sleep(0.05)
            inside = _niceness()
        return base, inside

    base, inside = _in_thread(run)
    assert inside == base


def test_helper_work_runs_at_its_callers_priority_and_the_helper_returns_to_its_own():
    from concurrent.futures import ThreadPoolExecutor

    from svclog.cpu_priority import at_callers_priority

    capable = priority.can_restore_priority()
    with ThreadPoolExecutor(1) as helper:
        helper_own = helper.submit(_niceness).result()

        def caller():
            if capable:
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), helper_own + 4)
            seen = helper.submit(at_callers_priority(lambda _: _niceness()), None).result()
            return seen, helper.submit(_niceness).result()

        seen, helper_after = _in_thread(caller)
    assert seen == (helper_own + 4 if capable else helper_own)
    assert helper_after == helper_own


def test_background_work_runs_below_lowered_queries_and_returns_to_its_priority():
    def run():
        base = _niceness()
        with priority.in_background():
            inside = _niceness()
        return base, inside, _niceness()

    base, inside, after = _in_thread(run)
    expected = max(base, priority.BACKGROUND_NICENESS) if priority.can_restore_priority() else base
    assert inside == expected and after == base
    assert priority.BACKGROUND_NICENESS > priority.LONG_NICENESS


def test_background_priority_is_restored_when_the_work_fails():
    def run():
        base = _niceness()
        try:
            with priority.in_background():
                raise RuntimeError("upload failed")
        except RuntimeError:
            pass
        return base, _niceness()

    base, after = _in_thread(run)
    assert after == base


def test_querier_and_gateway_processes_hand_the_gil_over_sooner_than_pythons_default():
    import sys

    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)  # Python's default
        priority.share_the_gil(priority.GATEWAY_SWITCH_INTERVAL_S)  # the gateway's (Gateway.__init__)
        assert sys.getswitchinterval() == priority.GATEWAY_SWITCH_INTERVAL_S < 0.005
        priority.share_the_gil()
        assert sys.getswitchinterval() == priority.QUERY_SWITCH_INTERVAL_S < priority.GATEWAY_SWITCH_INTERVAL_S
        priority.share_the_gil(priority.GATEWAY_SWITCH_INTERVAL_S)  # a process hosting both keeps the shorter
        assert sys.getswitchinterval() == priority.QUERY_SWITCH_INTERVAL_S
    finally:
        sys.setswitchinterval(before)


def test_on_long_is_called_past_the_delay_even_where_priorities_stay_as_they_are():
    called = threading.Event()
    work = LongWorkPriority(after_s=0.01, niceness=9, enabled=False)
    with work.lowered_when_long(on_long=called.set):
        assert called.wait(1.0)
    quick = threading.Event()
    with work.lowered_when_long(on_long=quick.set):
        pass
    time.sleep(0.05)
    assert not quick.is_set()  # a block that ended before the delay is never called long


@pytest.fixture
def no_cpu_floor(monkeypatch):
    """Sub-queries count as long once past the delay, whatever CPU their thread used, and every
    check asks the gate."""
    monkeypatch.setattr(priority, "LONG_CPU_S", 0.0)
    monkeypatch.setattr(priority, "LOOK_EVERY_S", 0.0)


def _long_turn_on_thread(gate: priority.LongWorkGate, query: object, stop=lambda: False):
    """A sub-query of `query` on a thread of its own, past the delay, at a check: it goes on when
    the gate lets it, runs until `release` is set, and ends. Returns (running, release, thread)."""
    running, release = threading.Event(), threading.Event()

    def run():
        turn = gate.turn(query, stop)
        turn.past_delay()
        turn.wait()
        running.set()
        release.wait(5.0)
        turn.end()

    thread = threading.Thread(target=run)
    thread.start()
    return running, release, thread


def _finish(*started):
    for _, release, thread in started:
        release.set()
        thread.join()


def test_long_sub_queries_of_several_queries_run_one_at_a_time(no_cpu_floor):
    gate = priority.LongWorkGate()
    first = _long_turn_on_thread(gate, "heavy-1")
    assert first[0].wait(1.0)  # the one that runs
    second = _long_turn_on_thread(gate, "heavy-2")
    assert not second[0].wait(0.2)  # waits at its check
    _finish(first)
    assert second[0].wait(1.0)
    _finish(second)


def test_a_query_alone_runs_its_long_pieces_together_until_another_query_comes(no_cpu_floor):
    gate = priority.LongWorkGate()
    pieces = [_long_turn_on_thread(gate, "heavy-1") for _ in range(3)]
    assert all(running.wait(1.0) for running, _, _ in pieces)
    # two more pieces, made and checked on this thread: alone, both go on
    began = time.monotonic()
    one = gate.turn("heavy-1", lambda: False)
    other = gate.turn("heavy-1", lambda: time.monotonic() - began > 0.3)
    for piece in (one, other):
        piece.past_delay()
        piece.wait()
    assert time.monotonic() - began < 0.1
    light = gate.turn("light", lambda: False)  # another query comes
    other.wait()  # only the first long piece goes on: this one waits, until its stop() gives up
    assert time.monotonic() - began >= 0.3
    light.end()
    one.end()
    other.end()
    _finish(*pieces)


def test_a_sub_query_held_up_without_working_long_stays_short(no_cpu_floor, monkeypatch):
    gate = priority.LongWorkGate()
    first = _long_turn_on_thread(gate, "heavy-1")
    assert first[0].wait(1.0)
    monkeypatch.setattr(priority, "LONG_CPU_S", 0.02)
    delayed = gate.turn("light", lambda: False)
    delayed.past_delay()
    began = time.monotonic()
    delayed.wait()  # its thread used far less than LONG_CPU_S: short, never waits
    assert time.monotonic() - began < 0.05 and not delayed.long
    delayed.end()
    _finish(first)


def test_other_threads_never_wait(no_cpu_floor):
    gate = priority.LongWorkGate()
    first = _long_turn_on_thread(gate, "heavy-1")
    assert first[0].wait(1.0)
    helpers_turn = gate.turn("heavy-2", lambda: False)
    helpers_turn.past_delay()
    began = time.monotonic()
    _in_thread(helpers_turn.wait)  # a helper thread's check never waits
    assert time.monotonic() - began < 0.1
    _finish(first)
    helpers_turn.end()


def test_a_waiting_sub_query_gives_up_once_stopped(no_cpu_floor):
    gate = priority.LongWorkGate()
    first = _long_turn_on_thread(gate, "heavy-1")
    assert first[0].wait(1.0)
    stopped = threading.Event()
    waiter = _long_turn_on_thread(gate, "heavy-2", stop=stopped.is_set)
    assert not waiter[0].wait(0.1)
    stopped.set()
    assert waiter[0].wait(1.0)  # returned without its turn (its check raises next)
    _finish(waiter)
    third = _long_turn_on_thread(gate, "heavy-3")
    assert not third[0].wait(0.1)  # heavy-1 still runs: the stopped one's end let nobody else in
    _finish(first)
    assert third[0].wait(1.0)
    _finish(third)


def _policy() -> int:
    return os.sched_getscheduler(threading.get_native_id())


def _lowered_policy(base: int) -> int:
    return os.SCHED_IDLE if priority.can_leave_idle_class() else base


def test_work_known_to_be_large_is_lowered_from_its_start_into_the_idle_class():
    def run():
        work = LongWorkPriority(after_s=0.05, niceness=7, enabled=priority.can_restore_priority())
        base = (_policy(), _niceness())
        calls: list[str] = []
        with work.lowered_when_long(on_long=lambda: calls.append("long"), at_once=True):
            at_start = (_policy(), _niceness(), list(calls))
            time.sleep(0.15)
            late = (_policy(), _niceness(), list(calls))
        return base, at_start, late, (_policy(), _niceness())

    base, at_start, late, after = _in_thread(run)
    if priority.can_restore_priority():
        assert at_start == (_lowered_policy(base[0]), max(base[1], 7), [])
    else:
        assert at_start[:2] == base
    assert late[2] == ["long"]  # the gate still hears of it past the delay
    assert after == base


def test_a_lowered_block_and_its_helpers_leave_the_idle_class_afterwards():
    from concurrent.futures import ThreadPoolExecutor

    from svclog.cpu_priority import at_callers_priority, lowered

    with ThreadPoolExecutor(1) as helper:
        helper_own = helper.submit(lambda: (_policy(), _niceness())).result()

        def caller():
            base = (_policy(), _niceness())
            with lowered():
                inside = (_policy(), _niceness())
                seen = helper.submit(at_callers_priority(lambda: (_policy(), _niceness()))).result()
            return base, inside, seen, (_policy(), _niceness())

        base, inside, seen, after = _in_thread(caller)
        helper_after = helper.submit(lambda: (_policy(), _niceness())).result()
    if priority.can_restore_priority():
        assert inside == (_lowered_policy(base[0]), max(base[1], priority.LONG_NICENESS))
    else:
        assert inside == base
    assert seen == inside and after == base and helper_after == helper_own
