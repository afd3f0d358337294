"""A large query's merge in the gateway waits at its checkpoints while small queries are in flight,
never longer than the gate's bound, and nothing else ever waits."""

from __future__ import annotations

import threading
import time

from svclog.cpu_priority import ForegroundGate, give_way


def _waited(run) -> float:
    began = time.perf_counter()
    run()
    return time.perf_counter() - began


def test_a_checkpoint_outside_background_work_never_waits():
    gate = ForegroundGate(max_pause_s=5.0)
    gate.enter()
    assert _waited(give_way) < 0.5
    assert gate.pauses == 0


def test_background_work_waits_until_the_foreground_work_leaves():
    gate = ForegroundGate(max_pause_s=5.0)
    work = gate.enter()
    threading.Timer(0.1, work.leave).start()
    with gate.background():
        waited = _waited(give_way)
    assert 0.08 <= waited < 2.0
    assert gate.pauses == 1


def test_a_pause_ends_at_the_bound_when_the_foreground_keeps_running():
    gate = ForegroundGate(max_pause_s=0.05)
    gate.enter()
    with gate.background():
        waited = _waited(give_way)
    assert 0.04 <= waited < 1.0


def test_background_work_runs_on_when_nothing_is_in_the_foreground():
    gate = ForegroundGate(max_pause_s=5.0)
    gate.enter().leave()
    with gate.background():
        assert _waited(give_way) < 0.5
    assert gate.pauses == 0


def test_leaving_twice_counts_once():
    gate = ForegroundGate(max_pause_s=5.0)
    first, second = gate.enter(), gate.enter()
    first.leave()
    first.leave()  # the early leave of a large query, then its `finally`
    with gate.background():
        threading.Timer(0.1, second.leave).start()
        assert _waited(give_way) >= 0.08  # `second` still held it: the double leave did not count twice


def test_the_gate_is_only_on_the_thread_that_entered_background():
    gate = ForegroundGate(max_pause_s=5.0)
    gate.enter()
    waited: list[float] = []
    with gate.background():
        other = threading.Thread(target=lambda: waited.append(_waited(give_way)))
        other.start()
        other.join()
    assert waited[0] < 0.5
    assert _waited(give_way) < 0.5  # and not after the block
