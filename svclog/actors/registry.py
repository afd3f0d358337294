"""Finding an actor by name, wherever it runs: in a process of its own, or as a role of the backend host.

A local `-target=all` start hosts its cheap backend components (ring, scheduler, compactor, ruler,
pattern ingester) in one process (`backend_host.py`); callers keep asking for them by the names they
always had and get a handle that routes each method call to the right part of the host.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ray
from ray.exceptions import GetTimeoutError, RayActorError

from svclog.actors.options import BACKEND_HOST_NAME, NAMESPACE

ROLES_TIMEOUT_S = 60.0  # the host answers once every part is built (its first start imports them)

# The roles of the backend host running in this process, if it is one: its parts look each other up
# while the host is still being built, when asking the host itself would wait for ever.
_hosted_here: frozenset[str] = frozenset()


def hosting(roles: list[str]) -> None:
    """Called by the backend host before it builds its parts."""
    global _hosted_here
    _hosted_here = frozenset(roles)


def named_actor(name: str) -> Any:
    """A handle for `name`'s methods (`handle.method.remote(...)`); ValueError when nothing answers to it."""
    try:
        return ray.get_actor(name, namespace=NAMESPACE)
    except ValueError:
        pass
    missing = ValueError(f"no actor named {name!r} in namespace {NAMESPACE!r}")
    if _hosted_here:
        if name not in _hosted_here:
            raise missing
        return HostedRole(ray.get_runtime_context().current_actor, name)
    try:
        host = ray.get_actor(BACKEND_HOST_NAME, namespace=NAMESPACE)
    except ValueError:
        raise missing from None
    try:
        roles: list[str] = ray.get(host.roles.remote(), timeout=ROLES_TIMEOUT_S)
    except (RayActorError, GetTimeoutError) as err:  # restarting (Ray brings it back) or still building
        raise ValueError(f"{name!r} is not answering: the backend host hosting it is unavailable ({err})") from None
    if name not in roles:
        raise missing
    return HostedRole(host, name)


@dataclass(frozen=True)
class HostedRole:
    """One part of the backend host, called like the actor it replaces."""

    host: Any
    role: str

    def __getattr__(self, method: str) -> HostedMethod:
        if method.startswith("_"):  # pickling and copy probe dunders: not remote methods
            raise AttributeError(method)
        return HostedMethod(self.host, self.role, method)


@dataclass(frozen=True)
class HostedMethod:
    host: Any
    role: str
    method: str

    def remote(self, *args: Any, **kwargs: Any) -> Any:
        return self.host.call.remote(self.role, self.method, *args, **kwargs)
