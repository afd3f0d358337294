"""Query scheduler: fair hierarchical queues (tenant -> actor-path levels) and querier bookkeeping.

Pure Python; svclog/actors/scheduler_actor.py hosts a `Scheduler` as a Ray actor.
"""

from svclog.scheduler.actor_path import (
    ACTOR_PATH_HEADER,
    ACTOR_PATH_HEADER_ALIAS,
    ActorPath,
    QueueDepthError,
    actor_path_from_headers,
    parse_actor_path,
)
from svclog.scheduler.fair_queue import Dequeued, FairQueue, TooManyOutstandingRequests
from svclog.scheduler.service import (
    Assignment,
    Dispatch,
    QuerierLostError,
    Released,
    Scheduler,
    SchedulerSettings,
    SchedulerStats,
)

__all__ = [
    "ACTOR_PATH_HEADER",
    "ACTOR_PATH_HEADER_ALIAS",
    "ActorPath",
    "Assignment",
    "Dequeued",
    "Dispatch",
    "FairQueue",
    "QuerierLostError",
    "QueueDepthError",
    "Released",
    "Scheduler",
    "SchedulerSettings",
    "SchedulerStats",
    "TooManyOutstandingRequests",
    "actor_path_from_headers",
    "parse_actor_path",
]
