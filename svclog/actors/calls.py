"""One way to call an actor: every call has a timeout, and Ray's errors come back as ours.

Callers outside `actors/` never see a Ray exception: a remote method's own error is re-raised
as raised (a LimitError from an ingester stays a LimitError), an actor that is missing, dead
or restarting raises `ActorUnavailable` (HTTP 503), and a call unanswered in time raises
`CallTimeout` (a TimeoutError, HTTP 504).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable
from typing import Any

import ray
from ray.exceptions import ActorUnavailableError, RayActorError, RayError

from svclog.actors.registry import named_actor
from svclog.model import SvcError

log = logging.getLogger("svclog")

# One set of timeouts for every call (seconds); a caller picks the one its call is.
PROBE_TIMEOUT_S = 5.0  # liveness probes: a busy actor is "starting", not failed
CALL_TIMEOUT_S = 30.0  # control-plane calls: ring, rules, delete requests, tail subscriptions
QUERY_TIMEOUT_S = 300.0  # reads: queries, patterns, ingester fan-outs
SHUTDOWN_TIMEOUT_S = 900.0  # flushes and shutdowns, which upload every chunk in memory


class ActorUnavailable(SvcError):
    """The actor is missing, died, or restarts; the client may try again."""

    status = 503

    def __init__(self, message: str, *, restarting: bool = False):
        super().__init__(message)
        self.restarting = restarting  # Ray brings it back by itself (same handle)


class ActorMissing(ActorUnavailable, ValueError):
    """No actor answers to the name (not started yet, or not run by this topology)."""


class CallTimeout(SvcError, TimeoutError):
    status = 504


def remote_cause(err: BaseException) -> BaseException:
    """The exception the remote method raised, behind Ray's wrappers (nested across actors)."""
    for _ in range(8):  # bounded: a wrapper never legitimately nests deeper
        cause = getattr(err, "cause", None)
        if not isinstance(cause, BaseException) or cause is err:
            break
        err = cause
    return err


def translate(err: BaseException, what: str, timeout: float | None) -> BaseException:
    """The error a caller outside `actors/` sees for a failed call of `what`."""
    if isinstance(err, ActorUnavailableError):
        return ActorUnavailable(f"{what}: the actor is restarting, please try again", restarting=True)
    if isinstance(err, RayActorError):
        return ActorUnavailable(f"{what}: the actor died ({_first_line(err)})")
    cause = remote_cause(err)
    if cause is not err:  # the remote method's own error, as it raised it
        return cause
    if isinstance(err, TimeoutError) and not isinstance(err, SvcError):
        return CallTimeout(f"{what}: no answer within {timeout:g}s" if timeout else f"{what}: timed out")
    if isinstance(err, RayError):  # an object lost with its owner, a dead worker or node
        return ActorUnavailable(f"{what}: {_first_line(err)}")
    return err


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _name(method: Any) -> str:
    return str(getattr(method, "_method_name", None) or getattr(method, "method", None) or "actor call")


def call(method: Any, *args: Any, timeout: float | None = CALL_TIMEOUT_S, **kwargs: Any) -> Any:
    """`method.remote(*args)` (a handle's method) and wait for its answer, blocking."""
    try:
        return ray.get(method.remote(*args, **kwargs), timeout=timeout)
    except Exception as err:  # noqa: BLE001 - re-raised as the caller's error
        raise translate(err, _name(method), timeout) from None


async def acall(method: Any, *args: Any, timeout: float | None = CALL_TIMEOUT_S, **kwargs: Any) -> Any:
    """`call` for the event loop."""
    try:
        return await asyncio.wait_for(awaitable(method.remote(*args, **kwargs)), timeout)
    except Exception as err:  # noqa: BLE001 - re-raised as the caller's error
        raise translate(err, _name(method), timeout) from None


async def acall_cancelling(method: Any, *args: Any, timeout: float | None = QUERY_TIMEOUT_S, **kwargs: Any) -> Any:
    """`acall` for work nobody should finish once its caller stops waiting: when the wait times
    out or the awaiting task is cancelled (the HTTP client went away), the call is cancelled in
    the actor too (not started yet: never runs; running: its guard sees Ray's cancel flag)."""
    ref = method.remote(*args, **kwargs)
    try:
        return await asyncio.wait_for(awaitable(ref), timeout)
    except asyncio.CancelledError:
        cancel_calls([ref])
        raise
    except Exception as err:  # noqa: BLE001 - re-raised as the caller's error
        if isinstance(err, TimeoutError):
            cancel_calls([ref])
        raise translate(err, _name(method), timeout) from None


def cancel_calls(refs: list[Any]) -> int:
    """Cancel actor calls by their references (best effort: finished ones are left alone); how many
    cancellations were sent."""
    sent = 0
    for ref in refs:
        if not isinstance(ref, ray.ObjectRef):  # a test's coroutine: ray.cancel would start a local Ray
            continue
        try:
            ray.cancel(ref)
            sent += 1
        except Exception:  # noqa: BLE001 - finished, or not a Ray reference (a test's coroutine)
            log.debug("cancelling %r failed", ref, exc_info=True)
    return sent


async def fetch(ref: Any, timeout: float | None = QUERY_TIMEOUT_S) -> Any:
    """An answer another actor handed over as an object reference."""
    try:
        return await asyncio.wait_for(awaitable(ref), timeout)
    except Exception as err:  # noqa: BLE001 - re-raised as the caller's error
        raise translate(err, "fetching an answer", timeout) from None


# The call a backend host's part runs on this thread (backend_host._run_call): its `cancelled` event.
HOSTED_CALL = threading.local()


def call_cancelled() -> bool:
    """Whether the caller cancelled the actor call this thread runs (`ray.cancel` sets a flag that
    a threaded actor's method reads here; ~12 us a call; a backend host sets its part's event);
    False outside a call."""
    hosted = getattr(HOSTED_CALL, "cancelled", None)
    if hosted is not None:
        return bool(hosted.is_set())
    try:
        return bool(ray.get_runtime_context().is_canceled())
    except Exception:  # noqa: BLE001 - not in a task (a pull loop's thread), or no Ray worker
        return False


def fire(method: Any, *args: Any, **kwargs: Any) -> Any:
    """`method.remote(*args)` without waiting (heartbeats, hints); the reference, None when it could not be sent."""
    try:
        return method.remote(*args, **kwargs)
    except Exception:  # noqa: BLE001 - best effort: the actor may be gone
        return None


def awaitable(ref: Any) -> Awaitable[Any]:
    """Something `await` takes for a call's answer (a Ray ObjectRef, or a test's coroutine)."""
    future = getattr(ref, "future", None)  # a Ray ObjectRef: its concurrent future, cancellable by wait_for
    return asyncio.wrap_future(future()) if callable(future) else ref


def lookup(name: str) -> Any:
    """The named actor's handle; ActorMissing (a ValueError, HTTP 503) when nothing answers to it."""
    try:
        return named_actor(name)
    except ValueError as err:
        raise ActorMissing(str(err)) from None


class Handles:
    """Named actor handles, looked up once and dropped when the actor died (Ray may start a new one)."""

    def __init__(self) -> None:
        self._handles: dict[str, Any] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> Any:
        """The actor's handle; ActorMissing when nothing answers to `name`."""
        with self._lock:
            handle = self._handles.get(name)
        if handle is None:
            handle = lookup(name)
            with self._lock:
                self._handles[name] = handle
        return handle

    def find(self, name: str) -> Any | None:
        """The handle, or None when no such actor runs."""
        try:
            return self.get(name)
        except ActorMissing:
            return None

    def put(self, name: str, handle: Any) -> None:
        with self._lock:
            self._handles[name] = handle

    def drop(self, name: str) -> None:
        with self._lock:
            self._handles.pop(name, None)
