"""An ingester's life around the ring: join with persisted tokens, prepare-shutdown, shutdown.

Pure (no Ray): the ring is a small Protocol the actor host implements with remote calls.
- Tokens: with a token file (`-ingester.token-file-path`), a restarted ingester takes
  back the tokens it wrote there on its first registration.
- Prepare-shutdown: a marker file beside the WAL, so the choice survives a restart; while
  it is set, SIGTERM/SIGINT makes the ingester leave the ring and flush before exiting.
- Shutdown: LEAVING -> flush (if asked) -> forget -> delete the token file (if asked).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from svclog.ring.ring import LEAVING, generate_tokens
from svclog.services import Service, State

log = logging.getLogger(__name__)
SHUTDOWN_MARKER = "prepare-shutdown"


class RingMembership(Protocol):
    def register(self, member_id: str, address: str, node: str, tokens: tuple[int, ...]) -> None: ...
    def set_state(self, member_id: str, state: str) -> None: ...
    def forget(self, member_id: str) -> bool: ...


class Flushable(Protocol):
    def flush(self, force: bool = False) -> int: ...


def _write_atomically(path: str, text: str, sync: bool = False) -> None:
    """Write then rename, through a temporary file of this call's own: two admin calls at once
    (concurrent prepare-shutdown requests) each rename their own file instead of racing on one."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            if sync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise


class ShutdownMarker:
    """The prepare-shutdown flag as a file: present = set."""

    def __init__(self, directory: str):
        self.path = os.path.join(directory, SHUTDOWN_MARKER)

    def is_set(self) -> bool:
        return os.path.exists(self.path)

    def set(self) -> None:
        _write_atomically(self.path, "set\n", sync=True)

    def unset(self) -> None:
        try:
            os.remove(self.path)
        except FileNotFoundError:
            pass


def token_file_path(configured: str, instance_id: str) -> str:
    """This instance's token file. Several ingester actors share one config, so the
    configured path gets the instance id: `{id}` in it is replaced, else `.<id>` is appended."""
    if not configured:
        return ""
    if "{id}" in configured:
        return configured.replace("{id}", instance_id)
    return f"{configured}.{instance_id}"


class TokenFile:
    """Ring tokens persisted as JSON `{"tokens": [...]}`; an empty path disables it."""

    def __init__(self, path: str):
        self.path = path

    def load(self) -> tuple[int, ...] | None:
        if not self.path:
            return None
        try:
            with open(self.path) as f:
                tokens = json.load(f)["tokens"]
            return tuple(sorted(int(t) for t in tokens)) or None
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError) as err:
            log.warning("ignoring unreadable token file %s: %s", self.path, err)
            return None

    def save(self, tokens: tuple[int, ...]) -> None:
        if not self.path:
            return
        _write_atomically(self.path, json.dumps({"tokens": list(tokens)}))

    def delete(self) -> bool:
        if not self.path:
            return False
        try:
            os.remove(self.path)
            return True
        except FileNotFoundError:
            return False


@dataclass(frozen=True)
class ShutdownReport:
    flushed_chunks: int = 0
    left_ring: bool = False
    tokens_deleted: bool = False


@dataclass(frozen=True)
class Identity:
    instance_id: str
    address: str
    node: str
    num_tokens: int


class IngesterLifecycle:
    """The ingester's service state and its ring membership, start to end."""

    def __init__(
        self,
        identity: Identity,
        ring: RingMembership,
        ingester: Flushable,
        marker: ShutdownMarker,
        tokens: TokenFile,
        *,
        stop_background: Callable[[], None] = lambda: None,
        ring_unavailable: tuple[type[Exception], ...] = (),
    ):
        self.identity = identity
        self.ring = ring
        self.ingester = ingester
        self.marker = marker
        self.token_file = tokens
        self.stop_background = stop_background
        # errors of a ring that is away for now (restarting, slow): the member's heartbeats register it
        # once the ring answers, so a join that meets one goes on rather than failing the ingester
        self.ring_unavailable = ring_unavailable
        self.service = Service(identity.instance_id)
        self.tokens: tuple[int, ...] = ()
        self._lock = threading.Lock()
        self._report: ShutdownReport | None = None

    def join(self) -> tuple[int, ...]:
        """Register in the ring with the token file's tokens (or new ones, then saved). A ring that
        is away for now (`ring_unavailable`) does not fail the join: the heartbeats, which carry the
        tokens, register the member when it answers again (a Ray actor whose constructor raises is
        not restarted: an ingester restarted while the ring's process restarted would be gone)."""
        ident = self.identity
        self.service.start()
        try:
            self.tokens = self.token_file.load() or generate_tokens(ident.instance_id, ident.num_tokens)
            try:
                self.ring.register(ident.instance_id, ident.address, ident.node, self.tokens)
            except self.ring_unavailable as err:
                log.warning("ingester %s: the ring is away (%s); heartbeats will register it", ident.instance_id, err)
            self.token_file.save(self.tokens)
        except Exception as err:
            self.service.fail(f"joining the ring: {err}")
            raise
        self.service.running()
        return self.tokens

    # ------------------------------------------------------------ prepare-shutdown

    def prepare_shutdown(self) -> bool:
        return self.marker.is_set()

    def set_prepare_shutdown(self, on: bool) -> None:
        if on:
            self.marker.set()
        else:
            self.marker.unset()

    # ------------------------------------------------------------ shutdown

    @property
    def state(self) -> State:
        return self.service.state

    def shutdown(self, flush: bool = True, delete_tokens: bool = False) -> ShutdownReport:
        """Leave the ring (LEAVING, flush if asked, forget) and stop. A second call returns the first report."""
        with self._lock:
            if self._report is not None:
                return self._report
            self.service.stop()
            try:
                self._report = self._leave(flush, delete_tokens)
            except Exception as err:
                self.service.fail(f"shutdown: {err}")
                raise
            self.service.terminated()
            self.marker.unset()  # done: the next start begins with the default behaviour
            return self._report

    def _leave(self, flush: bool, delete_tokens: bool) -> ShutdownReport:
        member = self.identity.instance_id
        self.stop_background()  # no heartbeat may re-register us after the forget
        self.ring.set_state(member, LEAVING)
        flushed = self.ingester.flush(force=True) if flush else 0
        self.ring.forget(member)
        deleted = self.token_file.delete() if delete_tokens else False
        log.info("ingester %s left the ring (flushed %d chunks, token file deleted: %s)", member, flushed, deleted)
        return ShutdownReport(flushed, True, deleted)

    def on_signal(self, default_flush: bool = False, default_unregister: bool = False) -> ShutdownReport | None:
        """What SIGTERM/SIGINT does: with prepare-shutdown set, leave the ring and flush; otherwise the
        configured defaults (`flush_on_shutdown`, `unregister_on_shutdown`), or nothing (the WAL keeps the data)."""
        if self.marker.is_set():
            return self.shutdown(flush=True)
        if default_flush or default_unregister:
            return self.shutdown(flush=default_flush)
        return None
