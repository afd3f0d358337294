"""ServeReplicaCount: a push never waits for the Serve controller; the count follows in the background."""

from __future__ import annotations

import threading
import time

from svclog.actors.clients import ServeReplicaCount


def _settle(count: ServeReplicaCount) -> None:
    deadline = time.monotonic() + 5
    while count._reading and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_slow_controller_read_does_not_hold_the_caller_up():
    release = threading.Event()
    reads = []

    def read(deployment: str) -> int:
        reads.append(deployment)
        release.wait(5)
        return 3

    count = ServeReplicaCount("gateway", ttl=60.0, read=read)
    began = time.monotonic()
    assert count() == 1 and count() == 1  # the last known count while the read runs
    assert time.monotonic() - began < 1.0
    release.set()
    _settle(count)
    assert count() == 3
    assert reads == ["gateway"]  # one read per ttl, not one per call


def test_a_failed_read_keeps_the_last_count_and_zero_reads_as_one():
    answers = iter([2, RuntimeError("controller busy"), 0])

    def read(deployment: str) -> int:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    count = ServeReplicaCount(ttl=0.0, read=read)
    count()
    _settle(count)
    assert count() == 2  # the second read starts here and fails
    _settle(count)
    assert count() == 2  # the third read starts here: none running
    _settle(count)
    assert count() == 1
