"""A large query's merge in the gateway waits at its checkpoints while small queries are in flight,
never longer than the gate's bound, and nothing else ever waits."""

from __future__ import annotations

import asyncio
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


async def _timed(pause) -> float:
    began = time.perf_counter()
    await pause()
    return time.perf_counter() - began


def test_an_event_loop_checkpoint_waits_until_the_foreground_leaves_and_the_loop_serves_meanwhile():
    gate = ForegroundGate(max_pause_s=5.0)

    async def scenario() -> tuple[float, int]:
        work = gate.enter()
        ticks = 0

        async def small_query() -> None:  # runs on the same loop while the large work waits
            nonlocal ticks
            for _ in range(5):
                ticks += 1
                await asyncio.sleep(0.02)
            work.leave()

        waited, _ = await asyncio.gather(_timed(gate.pause_async), small_query())
        return waited, ticks

    waited, ticks = asyncio.run(scenario())
    assert 0.08 <= waited < 2.0
    assert ticks == 5
    assert gate.pauses == 1


def test_an_event_loop_checkpoint_is_woken_by_work_that_leaves_on_another_thread():
    gate = ForegroundGate(max_pause_s=5.0)

    async def scenario() -> float:
        work = gate.enter()
        threading.Timer(0.1, work.leave).start()
        return await _timed(gate.pause_async)

    assert 0.08 <= asyncio.run(scenario()) < 2.0


def test_an_event_loop_checkpoint_ends_at_the_bound_and_never_waits_with_nothing_in_flight():
    gate = ForegroundGate(max_pause_s=0.05)

    async def scenario() -> tuple[float, float]:
        idle = await _timed(gate.pause_async)
        gate.enter()  # never leaves
        return idle, await _timed(gate.pause_async)

    idle, bounded = asyncio.run(scenario())
    assert idle < 0.5
    assert 0.04 <= bounded < 1.0
    assert gate._loop_waiters == []  # a timed-out waiter is not left behind
