"""Small reads from the ingesters on this node over local sockets (svclog/ingester/local_reads.py)
instead of actor calls.

A few connections per ingester, each carrying one read at a time: a read that finds them all
busy, or an ingester with none (another node, still starting, a connection that broke), goes
as an actor call. A connection that fails is closed and not reused; after a failure to open
one, the ingester is asked again only after `RETRY_S`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Client, Connection
from typing import Any

import ray

from svclog.actors.calls import CALL_TIMEOUT_S, call
from svclog.actors.push_channels import ChannelUnavailable
from svclog.ingester.local_listener import OK, decode_rejection, hang_up
from svclog.ingester.local_reads import decode_answer, encode_read

log = logging.getLogger(__name__)


class ReadRejected(Exception):
    """The ingester ran the read and raised `cause`: the read's answer, as an actor call's error."""

    def __init__(self, cause: Exception):
        super().__init__(str(cause))
        self.cause = cause


class PendingRead:
    """A read sent on a connection: `answer` waits for its result; `hang_up` ends the wait from
    another thread (a cancelled query)."""

    def __init__(self, channels: ReadChannels, address: str, connection: Connection):
        self._channels = channels
        self._address = address
        self._connection: Connection | None = connection

    def answer(self, timeout_s: float) -> Any:
        """The read's result; ReadRejected with the ingester's error; TimeoutError; ChannelUnavailable
        when the connection failed or was hung up (a failed connection is closed)."""
        connection = self._connection
        assert connection is not None, "answer() is called once"
        try:
            answered = connection.poll(timeout_s)
            answer = connection.recv_bytes() if answered else b""
        except Exception as err:  # noqa: BLE001 - any failure is the connection's
            self._channels.discard(self._address, connection)
            raise ChannelUnavailable(f"the read channel to {self._address} failed: {err}") from err
        finally:
            self._connection = None  # a hang-up from now on has nothing to end
        if not answered:  # the answer may still come: this connection carries nothing else
            self._channels.discard(self._address, connection)
            raise TimeoutError(f"no answer from ingester {self._address} within {timeout_s:g}s")
        self._channels.give_back(self._address, connection)
        if answer[:1] != OK:
            raise ReadRejected(decode_rejection(answer))
        return decode_answer(answer[1:])

    def hang_up(self) -> None:
        connection = self._connection
        if connection is not None:
            hang_up(connection)


class ReadChannels:
    """Connections to the read listeners of this process's ingesters, by ingester address;
    `connect(address)` opens one."""

    RETRY_S = 5.0
    PER_INGESTER = 4  # connections (reads at once) per ingester; more reads go as actor calls

    def __init__(self, connect: Callable[[str], Connection], clock: Callable[[], float] = time.monotonic):
        self._connect = connect
        self._clock = clock
        self._idle: dict[str, list[Connection]] = {}
        self._open: dict[str, int] = {}  # connections per address, idle or carrying a read
        self._retry_at: dict[str, float] = {}
        self._lock = threading.Lock()
        self.sent = 0  # reads the channels carried

    def send(self, address: str, method: str, args: tuple) -> PendingRead:
        """Send the read on a free connection; ChannelUnavailable when none is free or it failed."""
        connection = self._take(address)
        try:
            connection.send_bytes(encode_read(method, args))
        except Exception as err:  # noqa: BLE001 - a broken connection: the read goes as an actor call
            self.discard(address, connection)
            raise ChannelUnavailable(f"the read channel to {address} failed: {err}") from err
        self.sent += 1
        return PendingRead(self, address, connection)

    def give_back(self, address: str, connection: Connection) -> None:
        with self._lock:
            self._idle.setdefault(address, []).append(connection)

    def discard(self, address: str, connection: Connection) -> None:
        """Close a connection that failed or was hung up; a later read may open another."""
        _close_quietly(connection)
        self._forget(address)

    def close(self) -> None:
        with self._lock:
            idle, self._idle, self._open = self._idle, {}, {}
        for connections in idle.values():
            for connection in connections:
                _close_quietly(connection)

    def _take(self, address: str) -> Connection:
        with self._lock:
            idle = self._idle.get(address)
            if idle:
                return idle.pop()
            if self._open.get(address, 0) >= self.PER_INGESTER:
                raise ChannelUnavailable(f"every read channel to {address} is busy")
            if self._clock() < self._retry_at.get(address, 0.0):
                raise ChannelUnavailable(f"no read channel to {address} until it is tried again")
            self._open[address] = self._open.get(address, 0) + 1
        try:  # outside the lock: the first connection asks the ingester where it listens
            return self._connect(address)
        except Exception as err:  # noqa: BLE001 - another node, an old ingester, still starting
            log.debug("no read channel to %s (%s); reads use actor calls", address, err)
            with self._lock:
                self._retry_at[address] = self._clock() + self.RETRY_S
            self._forget(address)
            raise ChannelUnavailable(f"no read channel to {address}: {err}") from err

    def _forget(self, address: str) -> None:
        """One connection to `address` is gone."""
        with self._lock:
            if self._open.get(address, 0) > 0:
                self._open[address] -= 1


class LocalReadConnector:
    """Opens connections to the read listener of the ingester behind a handle, when it runs on this
    node (the listener's address and key come from one actor call, then are kept)."""

    def __init__(self, handle_of: Callable[[str], Any]):
        self._handle_of = handle_of
        self._where: dict[str, tuple[str, bytes]] = {}

    def __call__(self, address: str) -> Connection:
        where = self._where.get(address)
        if where is None:
            listen, authkey, node = call(self._handle_of(address).read_channel, timeout=CALL_TIMEOUT_S)
            if node != ray.get_runtime_context().get_node_id():
                raise ChannelUnavailable("the ingester runs on another node")
            where = self._where[address] = (listen, authkey)
        try:
            return Client(where[0], family="AF_UNIX", authkey=where[1])
        except Exception:
            self._where.pop(address, None)  # a restarted ingester listens elsewhere: ask it again
            raise


def _close_quietly(connection: Connection) -> None:
    try:
        connection.close()
    except OSError as err:
        log.debug("read channel close: %s", err)
