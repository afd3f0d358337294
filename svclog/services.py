"""Component lifecycle states (New, Starting, Running, Stopping, Terminated, Failed) and readiness.

Pure: no Ray, no I/O. A `Service` is one component's state machine; a `ServiceSet`
holds the components one process answers for and derives `/services` and `/ready`
from them. Components hosted elsewhere (Ray actors) are *observed*: `observe` walks
the machine along legal transitions to the state a probe reported, and starts a new
incarnation when the reported state is unreachable (Ray restarted a failed actor).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from enum import Enum


class State(str, Enum):  # noqa: UP042  str() of a member stays as it was
    NEW = "New"
    STARTING = "Starting"
    RUNNING = "Running"
    STOPPING = "Stopping"
    TERMINATED = "Terminated"
    FAILED = "Failed"

    def __str__(self) -> str:
        return self.value


TERMINAL = frozenset({State.TERMINATED, State.FAILED})

# API.md lists Starting->Running, Running->Stopping and {Starting, Running, Stopping}->Failed;
# New->Starting, Stopping->Terminated and stopping a service that never started complete the cycle.
TRANSITIONS: dict[State, frozenset[State]] = {
    State.NEW: frozenset({State.STARTING, State.TERMINATED}),
    State.STARTING: frozenset({State.RUNNING, State.FAILED}),
    State.RUNNING: frozenset({State.STOPPING, State.FAILED}),
    State.STOPPING: frozenset({State.TERMINATED, State.FAILED}),
    State.TERMINATED: frozenset(),
    State.FAILED: frozenset(),
}

# The legal path from each state to each reachable state (shortest), used by `observe`.
_PATHS: dict[tuple[State, State], tuple[State, ...]] = {}


def _build_paths() -> None:
    for origin in State:
        frontier: list[tuple[State, tuple[State, ...]]] = [(origin, ())]
        seen = {origin}
        while frontier:
            state, path = frontier.pop(0)
            _PATHS[(origin, state)] = path
            for nxt in sorted(TRANSITIONS[state], key=list(State).index):
                if nxt not in seen:
                    seen.add(nxt)
                    frontier.append((nxt, (*path, nxt)))


_build_paths()


class InvalidTransition(Exception):
    """A state change the lifecycle does not allow (e.g. Terminated -> Running)."""


def parse_state(text: str) -> State:
    for state in State:
        if state.value.lower() == str(text).strip().lower():
            return state
    raise ValueError(f"unknown service state {text!r}")


@dataclass
class Service:
    """One component's lifecycle. Thread-safe: actor hosts change it from several threads."""

    name: str
    state: State = State.NEW
    failure: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def transition(self, target: State, failure: str = "") -> None:
        with self._lock:
            if target not in TRANSITIONS[self.state]:
                raise InvalidTransition(f"{self.name}: {self.state} -> {target} is not allowed")
            self.state = target
            if target is State.FAILED:
                self.failure = failure or "failed"

    def start(self) -> None:
        self.transition(State.STARTING)

    def running(self) -> None:
        self.transition(State.RUNNING)

    def stop(self) -> None:
        """Running -> Stopping; a service that never started goes straight to Terminated."""
        self.transition(State.TERMINATED if self.state is State.NEW else State.STOPPING)

    def terminated(self) -> None:
        self.transition(State.TERMINATED)

    def fail(self, reason: str) -> None:
        self.transition(State.FAILED, reason)

    @property
    def is_running(self) -> bool:
        return self.state is State.RUNNING

    @property
    def is_terminal(self) -> bool:
        return self.state in TERMINAL


class ServiceSet:
    """The components one process reports on, in registration order."""

    def __init__(self, names: tuple[str, ...] | list[str] = ()):
        self._services: dict[str, Service] = {}
        self._lock = threading.Lock()
        for name in names:
            self.add(name)

    def add(self, name: str) -> Service:
        with self._lock:
            if name not in self._services:
                self._services[name] = Service(name)
            return self._services[name]

    def get(self, name: str) -> Service:
        return self._services[name]

    def __contains__(self, name: str) -> bool:
        return name in self._services

    def retain(self, names: set[str] | frozenset[str]) -> None:
        """Drop the components no longer part of this process (e.g. an ingester that left the ring)."""
        with self._lock:
            for name in [n for n in self._services if n not in names]:
                del self._services[name]

    def observe(self, name: str, reported: State, failure: str = "") -> Service:
        """Bring a component's machine to what a probe reported, through legal transitions only.

        A reported state the machine cannot reach any more (a Failed actor that Ray
        restarted answers again) begins a new incarnation from New.
        """
        with self._lock:
            service = self._services.setdefault(name, Service(name))
            path = _PATHS.get((service.state, reported))
            if path is None:
                service = self._services[name] = Service(name)
                path = _PATHS[(State.NEW, reported)]
            for state in path:
                service.transition(state, failure)
            return service

    def states(self) -> list[tuple[str, State]]:
        with self._lock:
            return [(s.name, s.state) for s in self._services.values()]

    def not_running(self) -> list[tuple[str, State]]:
        return [(name, state) for name, state in self.states() if state is not State.RUNNING]


def render_services(states: list[tuple[str, State]]) -> str:
    """The `/services` body: one `name => State` line per component."""
    return "".join(f"{name} => {state.value}\n" for name, state in states)


def readiness(states: list[tuple[str, State]]) -> tuple[bool, str]:
    """(ready, body) for `/ready`: ready only when every component is Running."""
    waiting = [(name, state) for name, state in states if state is not State.RUNNING]
    if not states:
        return False, "not ready: no components registered\n"
    if not waiting:
        return True, "ready\n"
    listed = ", ".join(f"{name} ({state.value})" for name, state in waiting)
    return False, f"not ready: waiting for {listed}\n"
