"""The ingester's push socket and the gateway's connection to it, over a real Unix socket (no Ray)."""

from __future__ import annotations

import threading
from multiprocessing.connection import AuthenticationError, Client

import pytest

from svclog.actors.push_channels import PushRejected, SocketLane
from svclog.ingester.ingester import Ingester, IngesterSettings
from svclog.ingester.local_listener import LocalListener
from svclog.ingester.payload import encode_batch
from svclog.model import Labels, LimitError, StreamColumns


class Writer:
    def put_chunks(self, tenant, chunks, writer_id):
        return []


def _payload(tenant: str, ts: list[int], lines: list[str]) -> bytes:
    return encode_batch(tenant, [StreamColumns(Labels({"app": "socket"}.items()), ts, lines, None)])


def test_a_push_over_the_socket_is_applied_and_answered(tmp_path):
    ingester = Ingester(IngesterSettings("i", str(tmp_path / "wal")), Writer())
    listener = LocalListener(ingester.push_payload)
    lane = SocketLane(listener.address, listener.authkey)
    try:
        lane.push(_payload("acme", [1_000, 2_000], ["first", "second"]), timeout_s=5)
        lane.push(_payload("acme", [3_000], ["third"]), timeout_s=5)
        [(labels, table)] = ingester.select("acme", (), 0, 10_000)
        assert table.column("line").to_pylist() == ["first", "second", "third"]
    finally:
        lane.close()
        listener.close()
        ingester.close()


def test_the_handlers_error_comes_back_as_the_pushs_answer_and_the_connection_stays():
    def handle(payload: bytes) -> None:
        if payload == b"over":
            raise LimitError("ingestion rate limit exceeded for tenant acme")

    listener = LocalListener(handle)
    lane = SocketLane(listener.address, listener.authkey)
    try:
        with pytest.raises(PushRejected) as rejected:
            lane.push(b"over", timeout_s=5)
        assert isinstance(rejected.value.cause, LimitError) and "rate limit" in str(rejected.value.cause)
        lane.push(b"fine", timeout_s=5)  # the same connection answers the next push
    finally:
        lane.close()
        listener.close()


def test_an_unpicklable_error_still_answers():
    class Odd(Exception):
        def __init__(self) -> None:
            super().__init__("odd")
            self.lock = threading.Lock()  # cannot be pickled

    def handle(payload: bytes) -> None:
        raise Odd()

    listener = LocalListener(handle)
    lane = SocketLane(listener.address, listener.authkey)
    try:
        with pytest.raises(PushRejected, match="Odd: odd"):
            lane.push(b"x", timeout_s=5)
    finally:
        lane.close()
        listener.close()


def test_a_wrong_key_is_refused_and_the_listener_keeps_serving():
    listener = LocalListener(lambda payload: None)
    try:
        with pytest.raises(AuthenticationError):
            Client(listener.address, family="AF_UNIX", authkey=b"not the key")
        lane = SocketLane(listener.address, listener.authkey)
        lane.push(b"x", timeout_s=5)
        lane.close()
    finally:
        listener.close()


def test_a_closed_listener_breaks_its_connections():
    listener = LocalListener(lambda payload: None)
    lane = SocketLane(listener.address, listener.authkey)
    lane.push(b"x", timeout_s=5)
    listener.close()
    with pytest.raises((EOFError, OSError)):
        lane.push(b"y", timeout_s=5)
    lane.close()


def test_a_push_the_ingester_does_not_answer_in_time_times_out():
    release = threading.Event()

    def slow(payload: bytes) -> None:
        release.wait(5)

    listener = LocalListener(slow)
    lane = SocketLane(listener.address, listener.authkey)
    try:
        with pytest.raises(TimeoutError):
            lane.push(b"slow", timeout_s=0.1)
    finally:
        release.set()
        lane.close()
        listener.close()
