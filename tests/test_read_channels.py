"""Small reads over an ingester's read socket (svclog/ingester/local_reads.py,
svclog/actors/read_channels.py): a real listener and real Unix sockets, no Ray."""

from __future__ import annotations

import threading
from multiprocessing.connection import Client

import pytest

from svclog.actors.push_channels import ChannelUnavailable
from svclog.actors.read_channels import ReadChannels, ReadRejected
from svclog.ingester.ingester import Ingester, IngesterSettings
from svclog.ingester.local_listener import LocalListener
from svclog.ingester.local_reads import serve_reads
from svclog.model import Labels, LimitError, Matcher, MatchType, StreamColumns


class Writer:
    def put_chunks(self, tenant, chunks, writer_id):
        return []


class Target:
    """Stands for the ingester: `stats_and_rows` answers its arguments, or blocks, or fails."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.release.set()
        self.fail_with: Exception | None = None

    def stats_and_rows(self, *args):
        self.release.wait(5)
        if self.fail_with is not None:
            raise self.fail_with
        return ("read", args)

    def push_payload(self, payload: bytes) -> None:
        raise AssertionError("never called: not a local read")


@pytest.fixture
def served():
    target = Target()
    listener = LocalListener(serve_reads(target), kind="read")
    opened: list[str] = []

    def connect(address: str):
        opened.append(address)
        return Client(listener.address, family="AF_UNIX", authkey=listener.authkey)

    channels = ReadChannels(connect)
    yield target, listener, channels, opened
    target.release.set()
    channels.close()
    listener.close()


def test_a_read_is_answered_and_its_connection_used_again(served):
    target, _, channels, opened = served
    assert channels.send("i1", "stats_and_rows", ("acme", 1, 2)).answer(5) == ("read", ("acme", 1, 2))
    assert channels.send("i1", "stats_and_rows", ("acme", 3, 4)).answer(5) == ("read", ("acme", 3, 4))
    assert opened == ["i1"] and channels.sent == 2


def test_the_ingesters_error_is_the_reads_answer(served):
    target, _, channels, _ = served
    target.fail_with = LimitError("too many bytes")
    with pytest.raises(ReadRejected) as caught:
        channels.send("i1", "stats_and_rows", ()).answer(5)
    assert isinstance(caught.value.cause, LimitError) and "too many bytes" in str(caught.value.cause)
    target.fail_with = None
    assert channels.send("i1", "stats_and_rows", ()).answer(5) == ("read", ())  # the connection still serves


def test_only_the_named_reads_are_served(served):
    _, _, channels, _ = served
    with pytest.raises(ReadRejected) as caught:
        channels.send("i1", "push_payload", (b"x",)).answer(5)
    assert isinstance(caught.value.cause, ValueError) and "not a local read" in str(caught.value.cause)


def test_reads_beyond_the_connections_per_ingester_go_elsewhere(served):
    target, _, channels, opened = served
    target.release.clear()
    pending = [channels.send("i1", "stats_and_rows", (n,)) for n in range(ReadChannels.PER_INGESTER)]
    with pytest.raises(ChannelUnavailable, match="busy"):
        channels.send("i1", "stats_and_rows", ("one more",))
    target.release.set()
    assert [p.answer(5) for p in pending] == [("read", (n,)) for n in range(ReadChannels.PER_INGESTER)]
    assert channels.send("i1", "stats_and_rows", ("now",)).answer(5) == ("read", ("now",))
    assert len(opened) == ReadChannels.PER_INGESTER


def test_a_read_not_answered_in_time_times_out_and_its_connection_is_dropped(served):
    target, _, channels, opened = served
    target.release.clear()
    with pytest.raises(TimeoutError):
        channels.send("i1", "stats_and_rows", ("slow",)).answer(0.1)
    target.release.set()
    # a late answer never reaches the next read: it goes on a new connection
    assert channels.send("i1", "stats_and_rows", ("next",)).answer(5) == ("read", ("next",))
    assert len(opened) == 2


def test_a_hung_up_read_ends_its_wait(served):
    target, _, channels, _ = served
    target.release.clear()
    pending = channels.send("i1", "stats_and_rows", ("cancelled",))
    threading.Timer(0.1, pending.hang_up).start()
    with pytest.raises(ChannelUnavailable):
        pending.answer(5)


def test_a_closed_listener_fails_the_read_and_a_restarted_one_serves_again():
    target = Target()
    listeners = [LocalListener(serve_reads(target), kind="read")]

    def connect(address: str):
        return Client(listeners[-1].address, family="AF_UNIX", authkey=listeners[-1].authkey)

    channels = ReadChannels(connect)
    try:
        assert channels.send("i1", "stats_and_rows", (1,)).answer(5) == ("read", (1,))
        listeners[-1].close()  # the ingester went away: its connections end
        with pytest.raises(ChannelUnavailable):
            channels.send("i1", "stats_and_rows", (2,)).answer(5)
        listeners.append(LocalListener(serve_reads(target), kind="read"))
        assert channels.send("i1", "stats_and_rows", (3,)).answer(5) == ("read", (3,))
    finally:
        channels.close()
        listeners[-1].close()


def test_an_ingester_without_a_channel_is_asked_again_only_after_a_while():
    now = [0.0]
    attempts: list[str] = []

    def connect(address: str):
        attempts.append(address)
        raise ChannelUnavailable("the ingester runs on another node")

    channels = ReadChannels(connect, clock=lambda: now[0])
    for _ in range(3):
        with pytest.raises(ChannelUnavailable):
            channels.send("far", "stats_and_rows", ())
    now[0] += ReadChannels.RETRY_S + 0.1
    with pytest.raises(ChannelUnavailable):
        channels.send("far", "stats_and_rows", ())
    assert attempts == ["far", "far"]


def test_a_real_ingesters_planning_read_crosses_with_its_rows(tmp_path):
    ingester = Ingester(IngesterSettings("i", str(tmp_path / "wal")), Writer())
    ingester.push("acme", [StreamColumns(Labels({"app": "a"}.items()), [1_000, 2_000], ["one", "two"], None)])
    listener = LocalListener(serve_reads(ingester), kind="read")
    channels = ReadChannels(lambda _: Client(listener.address, family="AF_UNIX", authkey=listener.authkey))
    try:
        matchers = (Matcher("app", MatchType.EQ, "a"),)
        stats, packed = channels.send(
            "i", "stats_and_rows", ("acme", matchers, 0, 10_000, 1 << 20, (0, 10_000))
        ).answer(5)
        assert stats == ingester.stream_stats("acme", matchers, 0, 10_000)
        [(labels, table)] = packed.unpack()
        assert labels == Labels({"app": "a"}.items()) and table.column("line").to_pylist() == ["one", "two"]
    finally:
        channels.close()
        listener.close()
        ingester.close()
