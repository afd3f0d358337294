"""The actor-path header: which sub-queue of its tenant's queue a request's sub-queries join.

`X-Svc-Actor-Path: org|team-b|bob` names a three-level path. As in the reference, the value is
split on `|` verbatim (segments are not trimmed and may be empty); an absent or empty header
means the tenant's local queue.
"""

from __future__ import annotations

from collections.abc import Mapping

from svclog.model import ValidationError

ACTOR_PATH_HEADER = "X-Svc-Actor-Path"
ACTOR_PATH_HEADER_ALIAS = "X-Loki-Actor-Path"
ACTOR_PATH_DELIMITER = "|"

ActorPath = tuple[str, ...]


class QueueDepthError(ValidationError):
    """The actor path nests deeper than `query_scheduler.max_queue_hierarchy_levels` allows."""


def parse_actor_path(header: str | None) -> ActorPath:
    """Split a header value into queue levels; None or "" -> () (the tenant's local queue)."""
    if not header:
        return ()
    return tuple(header.split(ACTOR_PATH_DELIMITER))


def actor_path_from_headers(headers: Mapping[str, str]) -> ActorPath:
    """Read the svclog header, else its Loki alias. `headers` must be case-insensitive (Starlette's are)."""
    value = headers.get(ACTOR_PATH_HEADER) or headers.get(ACTOR_PATH_HEADER_ALIAS)
    return parse_actor_path(value)


def limit_depth(path: ActorPath, max_levels: int) -> ActorPath:
    """Apply `max_queue_hierarchy_levels` as the reference does.

    0 disables hierarchical queues (every request goes to the tenant's local queue); a path
    deeper than the limit is refused rather than silently merged into a shallower queue.
    """
    if max_levels <= 0:
        return ()
    if len(path) > max_levels:
        raise QueueDepthError(
            f"the header {ACTOR_PATH_HEADER} with value '{ACTOR_PATH_DELIMITER.join(path)}' would result in "
            f"a sub-queue nested {len(path)} levels deep, but only {max_levels} levels are allowed by "
            "query_scheduler.max_queue_hierarchy_levels (-query-scheduler.max-queue-hierarchy-levels)"
        )
    return path
