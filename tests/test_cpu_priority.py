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
