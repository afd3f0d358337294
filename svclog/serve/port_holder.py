"""Holds svclog's HTTP port from the first moment of a start, answering 503 with Retry-After.

Serve's HTTP entry (HAProxy, or Serve's own proxy) binds the port as Serve starts, before any
route exists, and answers 404 until one does: log shippers treat a 404 as final and drop their
batches. The holder binds the port first (SO_REUSEPORT, as Serve's entry does) and attaches a
one-instruction socket filter to the port's reuseport group that sends every new connection to
socket 0 of the group, its own: while it holds, Serve's entry is bound but gets no connection.
Once Serve routes to the gateway, the holder detaches the filter and closes; the kernel then
hands every connection to Serve. Linux only; elsewhere (or if the kernel refuses the filter)
the holder does not bind at all, since sharing the port without the filter would split
connections between its 503 and Serve's 404.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import socket
import struct
import threading

log = logging.getLogger("svclog")

SO_ATTACH_REUSEPORT_CBPF = 51  # linux/asm-generic/socket.h
SO_DETACH_REUSEPORT_BPF = 68
# cBPF "return 0": the selected socket is index 0 of the reuseport group, the first one bound
_RETURN_ZERO = struct.pack("HBBI", 0x06, 0, 0, 0)  # BPF_RET | BPF_K, k = 0

HEAD_LIMIT = 64 * 1024  # request line and headers read before answering
HEAD_TIMEOUT_S = 5.0
DRAIN_TIMEOUT_S = 1.0  # how long a body the client is still sending is read (and dropped) after the answer


def response(message: str) -> bytes:
    body = message.encode()
    return (
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
        b"Retry-After: 1\r\nConnection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )


class PortHolder:
    """The listening socket and a small asyncio server on its own thread (the caller's thread
    goes on starting Ray and Serve)."""

    def __init__(self, host: str, port: int, message: str = "svclog is starting, please try again shortly\n"):
        self.host, self.port = host, port
        self.answer = response(message)
        self.sock: socket.socket | None = None
        self._filter: ctypes.Array[ctypes.c_char] | None = None  # the filter's instructions stay alive while attached
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def open(self) -> bool:
        """Bind and start answering; False (nothing bound) when the port or the filter is refused."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind((self.host, self.port))
            self._filter = instructions = ctypes.create_string_buffer(_RETURN_ZERO)
            program = struct.pack("HL", len(_RETURN_ZERO) // 8, ctypes.addressof(instructions))
            sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, program)
            sock.listen(1024)
        except (OSError, AttributeError) as err:
            sock.close()
            log.info("start: not holding port %d with 503s (%s)", self.port, err)
            return False
        self.sock = sock
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), name="port-holder", daemon=True)
        self._thread.start()
        ready.wait(5)
        return True

    def _serve(self, ready: threading.Event) -> None:
        loop = self._loop = asyncio.new_event_loop()
        server = loop.run_until_complete(asyncio.start_server(self._answer, sock=self.sock, backlog=1024))
        ready.set()
        try:
            loop.run_forever()
        finally:
            server.close()
            loop.close()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
            writer.write(self.answer)
            await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()
            # read what the client still sends (a push body) so closing does not reset the answer away
            async with asyncio.timeout(DRAIN_TIMEOUT_S):
                while await reader.read(65536):
                    pass
        except (Exception, asyncio.CancelledError):  # noqa: BLE001 - a client that went away or never spoke
            pass
        finally:
            writer.close()

    def release(self) -> None:
        """Hand the port to whoever else is bound to it: the filter goes first (connections are then
        spread over every bound socket), then the holder's socket."""
        if self.sock is None:
            return
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, SO_DETACH_REUSEPORT_BPF, 0)
        except OSError as err:  # the group's filter goes with its last socket anyway
            log.debug("port holder: detaching the filter: %s", err)
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(5)
        self.sock.close()
        self.sock = None
