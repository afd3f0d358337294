"""Push channels (svclog/actors/push_channels.py) without Ray: fake lanes stand for socket connections."""

from __future__ import annotations

import threading
import time

import pytest

from svclog.actors.push_channels import ChannelUnavailable, PushChannels, PushRejected
from svclog.model import LimitError


class FakeLane:
    def __init__(self, address: str, fail_with: Exception | None = None, delay_s: float = 0.0):
        self.address = address
        self.pushed: list[bytes] = []
        self.fail_with = fail_with
        self.delay_s = delay_s
        self.closed = threading.Event()
        self.in_push = 0
        self.most_in_push = 0

    def push(self, payload: bytes, timeout_s: float) -> None:
        self.in_push += 1
        self.most_in_push = max(self.most_in_push, self.in_push)
        try:
            time.sleep(self.delay_s)
            if self.fail_with is not None:
                raise self.fail_with
            self.pushed.append(payload)
        finally:
            self.in_push -= 1

    def close(self) -> None:
        self.closed.set()


class Connector:
    """Opens FakeLanes, counting them; `refuse` makes opening fail (the ingester runs elsewhere)."""

    def __init__(self) -> None:
        self.lanes: list[FakeLane] = []
        self.refuse = False
        self.next_failure: Exception | None = None

    def __call__(self, address: str) -> FakeLane:
        if self.refuse:
            raise RuntimeError("the ingester runs on another node")
        lane = FakeLane(address, fail_with=self.next_failure)
        self.next_failure = None
        self.lanes.append(lane)
        return lane


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_pushes_go_over_one_channel_per_ingester_opened_once():
    connector = Connector()
    channels = PushChannels(connector)
    for payload in (b"a", b"b"):
        channels.push("ingester-0", payload, 5.0)
    channels.push("ingester-1", b"c", 5.0)
    assert [(lane.address, lane.pushed) for lane in connector.lanes] == [
        ("ingester-0", [b"a", b"b"]),
        ("ingester-1", [b"c"]),
    ]
    assert (channels.stats.pushes, channels.stats.opened, channels.stats.broken) == (3, 2, 0)


def test_the_ingesters_own_error_is_the_answer_and_the_channel_stays():
    connector = Connector()
    connector.next_failure = PushRejected(LimitError("ingestion rate limit exceeded"))
    channels = PushChannels(connector)
    with pytest.raises(PushRejected) as rejected:
        channels.push("ingester-0", b"a", 5.0)
    assert isinstance(rejected.value.cause, LimitError)
    lane = connector.lanes[0]
    lane.fail_with = None
    channels.push("ingester-0", b"b", 5.0)  # the same channel carries the next push
    assert len(connector.lanes) == 1 and lane.pushed == [b"b"] and not lane.closed.is_set()


def test_a_broken_channel_is_closed_and_opened_again_after_the_retry_delay():
    connector, clock = Connector(), Clock()
    connector.next_failure = ConnectionError("the actor died")
    channels = PushChannels(connector, clock=clock)
    with pytest.raises(ChannelUnavailable):
        channels.push("ingester-0", b"a", 5.0)
    broken = connector.lanes[0]
    assert broken.closed.is_set()
    assert channels.stats.broken == 1
    clock.now += PushChannels.RETRY_S / 2
    with pytest.raises(ChannelUnavailable):  # not opened again yet: the caller uses an actor call
        channels.push("ingester-0", b"b", 5.0)
    assert len(connector.lanes) == 1
    clock.now += PushChannels.RETRY_S
    channels.push("ingester-0", b"c", 5.0)
    assert len(connector.lanes) == 2 and connector.lanes[1].pushed == [b"c"]


def test_a_channel_that_cannot_be_opened_is_asked_again_later():
    connector, clock = Connector(), Clock()
    connector.refuse = True
    channels = PushChannels(connector, clock=clock)
    assert not channels.open("ingester-0")
    with pytest.raises(ChannelUnavailable):
        channels.push("ingester-0", b"a", 5.0)
    connector.refuse = False
    assert not channels.open("ingester-0")  # within the retry delay: not tried
    clock.now += PushChannels.RETRY_S
    assert channels.open("ingester-0")
    channels.push("ingester-0", b"b", 5.0)
    assert connector.lanes[0].pushed == [b"b"]


def test_one_push_at_a_time_on_a_channel():
    connector = Connector()
    channels = PushChannels(connector)
    assert channels.open("ingester-0")
    connector.lanes[0].delay_s = 0.02
    threads = [threading.Thread(target=channels.push, args=("ingester-0", bytes([i]), 5.0)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lane = connector.lanes[0]
    assert lane.most_in_push == 1 and sorted(lane.pushed) == [bytes([i]) for i in range(6)]


def test_close_closes_every_channel_and_later_pushes_use_calls():
    connector = Connector()
    channels = PushChannels(connector)
    channels.push("ingester-0", b"a", 5.0)
    channels.push("ingester-1", b"b", 5.0)
    channels.close()
    assert all(lane.closed.is_set() for lane in connector.lanes)
    with pytest.raises(ChannelUnavailable):
        channels.push("ingester-0", b"c", 5.0)
    assert len(connector.lanes) == 2  # nothing opened after the close


def test_a_push_waiting_behind_one_that_breaks_the_channel_is_not_sent_on_it():
    connector = Connector()
    channels = PushChannels(connector)
    assert channels.open("ingester-0")
    lane = connector.lanes[0]
    lane.delay_s, lane.fail_with = 0.05, ConnectionError("gone")
    outcomes: list[str] = []

    def push(payload: bytes) -> None:
        try:
            channels.push("ingester-0", payload, 5.0)
            outcomes.append("sent")
        except ChannelUnavailable:
            outcomes.append("call")

    first = threading.Thread(target=push, args=(b"a",))
    first.start()
    time.sleep(0.01)
    second = threading.Thread(target=push, args=(b"b",))
    second.start()
    first.join()
    lane.fail_with = None  # were the waiting push sent on the broken lane, it would now succeed
    second.join()
    assert outcomes == ["call", "call"] and lane.pushed == []


def test_close_waits_for_the_push_in_flight():
    connector = Connector()
    channels = PushChannels(connector)
    assert channels.open("ingester-0")
    lane = connector.lanes[0]
    lane.delay_s = 0.1
    pushing = threading.Thread(target=channels.push, args=("ingester-0", b"a", 5.0))
    pushing.start()
    time.sleep(0.02)
    channels.close()
    pushing.join()
    assert lane.pushed == [b"a"] and lane.closed.is_set()
