"""The frontend's scheduler client gives way before fetching a large answer, and only then
(Ray-free: the scheduler is a stand-in handle)."""

from __future__ import annotations

import asyncio
import pickle

from svclog.actors.calls import Handles
from svclog.actors.service_clients import SchedulerClient


class Method:
    def __init__(self, fn):
        self.fn = fn

    def remote(self, *args, **kwargs):
        return self.fn(*args, **kwargs)  # a coroutine: what `awaitable` takes in tests


class StandInScheduler:
    """Answers ticket 1 inline (pickled) and ticket 2 by reference (an object to fetch)."""

    def __init__(self, events: list[str]):
        self.events = events
        self.result = Method(self._result)

    async def _result(self, ticket: int, wait: float) -> list:
        if ticket == 1:
            return [pickle.dumps("small answer")]
        return [self._fetch()]

    async def _fetch(self) -> str:
        self.events.append("fetched")
        return "large answer"


def _client(events: list[str]) -> SchedulerClient:
    handles = Handles()
    handles.put("scheduler", StandInScheduler(events))
    return SchedulerClient("scheduler", handles)


def test_a_large_answer_is_fetched_after_giving_way():
    events: list[str] = []

    async def give_way() -> None:
        events.append("gave way")

    answer = asyncio.run(_client(events).result(2, 5.0, give_way))
    assert answer == "large answer"
    assert events == ["gave way", "fetched"]


def test_an_inline_answer_never_waits_and_no_pause_means_none():
    events: list[str] = []

    async def give_way() -> None:
        events.append("gave way")

    client = _client(events)
    assert asyncio.run(client.result(1, 5.0, give_way)) == "small answer"
    assert asyncio.run(client.result(2, 5.0)) == "large answer"
    assert events == ["fetched"]
