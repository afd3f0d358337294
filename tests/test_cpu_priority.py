"""Long sub-queries run at a lower CPU priority, only while they run, and so does the work they hand to helpers."""

from __future__ import annotations

import os
import threading
import time

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


def test_a_querier_process_hands_the_gil_over_sooner_than_pythons_default():
    import sys

    before = sys.getswitchinterval()
    try:
        priority.share_the_gil()
        assert sys.getswitchinterval() == priority.QUERY_SWITCH_INTERVAL_S < 0.005
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


def _long_turn_on_thread(gate: priority.LongWorkGate, stop=lambda: False):
    """A turn made long on a thread of its own, which waits for a slot, holds it until `release`
    is set, and ends. Returns (holding event, release event, thread)."""
    holding, release = threading.Event(), threading.Event()

    def run():
        turn = gate.turn(stop)
        turn.became_long()
        turn.wait()
        holding.set()
        release.wait(5.0)
        turn.end()

    thread = threading.Thread(target=run)
    thread.start()
    return holding, release, thread


def test_long_turns_hold_the_slot_one_at_a_time_and_hand_it_on():
    gate = priority.LongWorkGate(slots=1)
    first_holds, first_done, first = _long_turn_on_thread(gate)
    assert first_holds.wait(1.0)
    second_holds, second_done, second = _long_turn_on_thread(gate)
    assert not second_holds.wait(0.2)  # waits at its check while the first runs
    first_done.set()
    assert second_holds.wait(1.0)
    second_done.set()
    first.join()
    second.join()


def test_short_turns_and_other_threads_never_wait():
    gate = priority.LongWorkGate(slots=1)
    holds, done, thread = _long_turn_on_thread(gate)
    assert holds.wait(1.0)
    short = gate.turn(lambda: False)
    began = time.monotonic()
    short.wait()  # not long: runs on
    other = gate.turn(lambda: False)
    other.became_long()
    _in_thread(other.wait)  # a helper thread's check never waits for the sub-query's slot
    assert time.monotonic() - began < 0.1
    done.set()
    thread.join()


def test_a_waiting_turn_gives_up_once_stopped_and_hands_back_nothing():
    gate = priority.LongWorkGate(slots=1)
    holds, done, thread = _long_turn_on_thread(gate)
    assert holds.wait(1.0)
    stopped = threading.Event()
    waiter_holds, waiter_done, waiter = _long_turn_on_thread(gate, stop=stopped.is_set)
    assert not waiter_holds.wait(0.1)
    stopped.set()
    assert waiter_holds.wait(1.0)  # returned without the slot (its check raises next)
    waiter_done.set()
    waiter.join()
    done.set()
    thread.join()
    # one slot, free again: a new long turn gets it at once
    again_holds, again_done, again = _long_turn_on_thread(gate)
    assert again_holds.wait(1.0)
    again_done.set()
    again.join()
