"""Local sockets an ingester takes pushes and small reads on, beside its Ray actor calls.

A gateway on the same node sends a push's payload (svclog/ingester/payload.py) and waits for
the answer: a push over an actor call spent ~2 of its ~6 ms in Ray's task submission and two RPCs
(bench's sequential 1000-line pushes), a Unix socket round trip of the same bytes is ~0.1 ms.
A small query's planning read goes the same way (svclog/ingester/local_reads.py), on a listener
of its own.

Framing and the handshake are the standard library's `multiprocessing.connection`: a
length-prefixed message each way, and an HMAC challenge with a per-process key that only Ray's
calls hand out (the socket is in Linux's abstract namespace: no file to clean up after a crash).
One thread per connection runs `handle(message)`, as Ray's call threads would; the answer is
`OK` followed by what the handler returned (nothing for a push), or `REJECTED` and the pickled
error the handler raised (a limit, a bad payload).
"""

from __future__ import annotations

import logging
import os
import pickle
import secrets
import socket
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection, Listener

log = logging.getLogger(__name__)

OK = b"\x00"
REJECTED = b"\x01"


def encode_rejection(err: BaseException) -> bytes:
    """The handler's error as the answer carries it (a plain RuntimeError when it cannot be pickled)."""
    try:
        return REJECTED + pickle.dumps(err)
    except Exception:  # noqa: BLE001 - an error holding something unpicklable
        return REJECTED + pickle.dumps(RuntimeError(f"{type(err).__name__}: {err}"))


def decode_rejection(answer: bytes) -> Exception:
    err = pickle.loads(answer[len(REJECTED) :])
    return err if isinstance(err, Exception) else RuntimeError(repr(err))


class LocalListener:
    """Serves `handle` on a fresh abstract Unix socket (`address`, `authkey`) until `close`;
    `kind` names the socket and its threads."""

    def __init__(self, handle: Callable[[bytes], bytes | None], kind: str = "push"):
        self.handle = handle
        self.kind = kind
        self.address = f"\0svclog-{kind}-" + secrets.token_hex(12)
        self.authkey = secrets.token_bytes(32)
        self._listener = Listener(self.address, family="AF_UNIX", backlog=16, authkey=self.authkey)
        self._connections: set[Connection] = set()
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept_forever, name=f"{kind}-listener", daemon=True).start()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            connections, self._connections = list(self._connections), set()
        self._listener.close()
        for connection in connections:
            hang_up(connection)

    def _accept_forever(self) -> None:
        while not self._closed:
            try:
                connection = self._listener.accept()
            except OSError:  # closed
                return
            except Exception as err:  # noqa: BLE001 - a failed handshake (wrong key): the next one
                log.warning("%s listener: a connection was refused (%s)", self.kind, err)
                continue
            with self._lock:
                if self._closed:
                    connection.close()
                    return
                self._connections.add(connection)
            threading.Thread(
                target=self._serve, args=(connection,), name=f"{self.kind}-connection", daemon=True
            ).start()

    def _serve(self, connection: Connection) -> None:
        try:
            while True:
                try:
                    payload = connection.recv_bytes()
                except (EOFError, OSError):  # the gateway went away or closed its end
                    return
                try:
                    answer = OK + (self.handle(payload) or b"")
                except Exception as err:  # noqa: BLE001 - the call's answer, as an actor call would raise it
                    answer = encode_rejection(err)
                try:
                    connection.send_bytes(answer)
                except OSError:
                    return
        finally:
            with self._lock:
                self._connections.discard(connection)
            connection.close()


def hang_up(connection: Connection) -> None:
    """End a connection another thread serves: its read sees the end, and it closes its own end
    (closing the Connection object under that thread's read would pull the handle from under it)."""
    try:
        with socket.socket(fileno=os.dup(connection.fileno())) as duplicate:
            duplicate.shutdown(socket.SHUT_RDWR)
    except OSError:  # already closed by its thread
        pass
