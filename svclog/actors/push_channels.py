"""Pushes to an ingester on the same node over a local socket (svclog/ingester/local_listener.py)
instead of an actor call, which costs a task submission and two RPCs.

Measured on the bench's sequential pushes (1000 lines, ~80 KB payload, one client): the Ray legs of
a push (submit, reach the ingester, answer back) took ~2.1 of its ~6 ms as actor calls. Ray's
compiled graphs cut them as much but their readers spin on `sched_yield` while they wait: an idle
ingester burned a whole core, and every query on the 2-core machine slowed (`logfmt_duration`
after the flush 318-325 against 202-215 ms); a socket's reader blocks.

One connection per ingester, one push at a time on it (an ingester applies pushes one by one
anyway; the other pushes' decoding goes on meanwhile). A channel that breaks (its ingester died
or restarted, a timeout) is closed and the push goes through an actor call instead; the channel
is opened again after `RETRY_S`. An ingester on another node has no channel (actor calls).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Client
from typing import Any, Protocol

import ray

from svclog.actors.calls import CALL_TIMEOUT_S, call
from svclog.ingester.local_listener import OK, decode_rejection

log = logging.getLogger(__name__)


class Lane(Protocol):
    """One connection to one ingester's push listener."""

    def push(self, payload: bytes, timeout_s: float) -> None:
        """Run the push; raise `PushRejected` with the ingester's own error, anything else when the
        channel failed."""

    def close(self) -> None:
        """Close the connection (the ingester keeps running)."""


class PushRejected(Exception):
    """The ingester ran the push and raised `cause` (a limit, a validation error): the push's answer."""

    def __init__(self, cause: Exception):
        super().__init__(str(cause))
        self.cause = cause


class ChannelUnavailable(Exception):
    """No channel carried the push (none yet, broken, closed): send it with an actor call."""


@dataclass
class ChannelStats:
    pushes: int = 0  # pushes a channel carried (rejected ones included)
    broken: int = 0  # channels closed after a failure
    opened: int = 0  # channels opened (again)


class PushChannels:
    """The channels of this process, by ingester address. `connect(address)` opens one (a `Lane`)."""

    RETRY_S = 5.0  # a broken channel, or one that could not be opened, is tried again after this long

    def __init__(self, connect: Callable[[str], Lane], clock: Callable[[], float] = time.monotonic):
        self._connect = connect
        self._clock = clock
        self._lanes: dict[str, Lane] = {}
        self._locks: dict[str, threading.Lock] = {}  # one push at a time per channel
        self._retry_at: dict[str, float] = {}  # addresses whose channel failed: not before then
        self._guard = threading.Lock()  # the maps above, and opening (one channel per ingester)
        self._closed = False
        self.stats = ChannelStats()

    def open(self, address: str) -> bool:
        """Open the channel to `address` now (a start's warm-up); False when it is not usable."""
        return self._lane(address) is not None

    def push(self, address: str, payload: bytes, timeout_s: float) -> None:
        """Push over the channel: returns once the ingester applied it; PushRejected with the
        ingester's error; ChannelUnavailable when the push did not go (or may not have arrived):
        the caller sends it with an actor call (a replayed push's entries are dropped as repeats
        when read, as replicas' are)."""
        lane = self._lane(address)
        if lane is None:
            raise ChannelUnavailable(f"no channel to {address}")
        with self._locks[address]:
            if self._lanes.get(address) is not lane:  # broken or closed while this push waited
                raise ChannelUnavailable(f"the channel to {address} closed")
            try:
                lane.push(payload, timeout_s)
            except PushRejected:
                self.stats.pushes += 1
                raise
            except Exception as err:  # noqa: BLE001 - any other failure is the channel's
                self._break(address, lane, err)
                raise ChannelUnavailable(f"the channel to {address} failed: {err}") from err
            self.stats.pushes += 1

    def close(self, wait_s: float = 5.0) -> None:
        """Close every channel (a clean stop, before the ingesters stop), each once the push it
        carries is answered (up to `wait_s`); later pushes use actor calls."""
        with self._guard:
            self._closed = True
            lanes, self._lanes = dict(self._lanes), {}
        for address, lane in lanes.items():
            lock = self._locks[address]
            answered = lock.acquire(timeout=wait_s)
            try:
                _close_quietly(lane)
            finally:
                if answered:
                    lock.release()

    def _lane(self, address: str) -> Lane | None:
        lane = self._lanes.get(address)
        if lane is not None or self._closed:
            return lane
        with self._guard:
            lane = self._lanes.get(address)
            if lane is not None or self._closed or self._clock() < self._retry_at.get(address, 0.0):
                return lane
            try:
                lane = self._connect(address)
            except Exception as err:  # noqa: BLE001 - another node, an old ingester, still starting
                # debug: an ingester on another node is asked again every RETRY_S, for good reason
                log.debug("no push channel to %s (%s); pushes use actor calls", address, err)
                self._retry_at[address] = self._clock() + self.RETRY_S
                return None
            self._lanes[address] = lane
            self._locks.setdefault(address, threading.Lock())
            self._retry_at.pop(address, None)
            self.stats.opened += 1
            return lane

    def _break(self, address: str, lane: Lane, err: BaseException) -> None:
        with self._guard:
            if self._lanes.get(address) is lane:
                del self._lanes[address]
                self._retry_at[address] = self._clock() + self.RETRY_S
                self.stats.broken += 1
        log.warning("push channel to %s failed (%s); actor calls until it opens again", address, err)
        _close_quietly(lane)


def _close_quietly(lane: Lane) -> None:
    try:
        lane.close()
    except Exception as err:  # noqa: BLE001 - already gone with its ingester
        log.debug("push channel close: %s", err)


class SocketLane:
    """A `Lane` over a connection to an ingester's push listener."""

    def __init__(self, address: str, authkey: bytes):
        self._connection = Client(address, family="AF_UNIX", authkey=authkey)

    def push(self, payload: bytes, timeout_s: float) -> None:
        self._connection.send_bytes(payload)
        if not self._connection.poll(timeout_s):
            raise TimeoutError(f"no answer within {timeout_s:g}s")
        answer = self._connection.recv_bytes()
        if answer != OK:
            raise PushRejected(decode_rejection(answer))

    def close(self) -> None:
        self._connection.close()


def open_lane(handle: Any) -> SocketLane:
    """A connection to the push listener of the ingester behind `handle`, if it runs on this node."""
    address, authkey, node = call(handle.push_channel, timeout=CALL_TIMEOUT_S)
    if node != ray.get_runtime_context().get_node_id():
        raise ChannelUnavailable("the ingester runs on another node")
    return SocketLane(address, authkey)
