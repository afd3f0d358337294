"""The query's deadline reaches the ingesters' selects, and a select it cut short fails the query
with the query's own timeout error."""

import pytest

from svclog.ingester.instance import SelectDeadlinePassed, check_deadline
from svclog.logql.engine.guard import QueryGuard, QueryTimedOut
from svclog.logql.source import SelectRequest
from svclog.model import Matcher, MatchType
from svclog.querier.source import StoreSource
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.index import IndexReader
from svclog.storage.objstore import ObjectStore

APP = (Matcher("app", MatchType.EQ, "a"),)


class DeadlineIngesters:
    """Records the deadline each select gets and stops as an ingester does once it has passed."""

    def __init__(self):
        self.deadlines = []

    def select(self, tenant, matchers, start, end, shard, line_filters=(), deadline=None):
        self.deadlines.append(deadline)
        check_deadline(deadline)
        return [], 1

    def series(self, tenant, matchers, start, end):
        return []


class Clock:
    """Reads `before` for the guard's first check, `after` from then on: the deadline passes while
    the select runs."""

    def __init__(self, before, after):
        self.times = [before]
        self.after = after

    def __call__(self):
        return self.times.pop() if self.times else self.after


def _source(tmp_path, ingesters, guard):
    store = ObjectStore(str(tmp_path / "s"))
    return StoreSource(["t"], IndexReader(store), ChunkStore(store), ingesters, guard=guard)


def test_the_select_gets_the_querys_deadline(tmp_path):
    ingesters = DeadlineIngesters()
    deadline = 4_000_000_000.0  # far ahead
    list(_source(tmp_path, ingesters, QueryGuard(deadline, 5_000_000_000)).select_logs(SelectRequest(APP, 0, 10)))
    assert ingesters.deadlines == [deadline]


def test_a_select_stopped_by_the_deadline_fails_with_the_querys_timeout(tmp_path):
    ingesters = DeadlineIngesters()
    guard = QueryGuard(150.0, 50_000_000_000, clock=Clock(100.0, 200.0))
    with pytest.raises(QueryTimedOut, match="after 50s .query_timeout."):
        list(_source(tmp_path, ingesters, guard).select_logs(SelectRequest(APP, 0, 10)))
    assert ingesters.deadlines == [150.0]  # the ingester stopped (its wall clock is past 150)
    with pytest.raises(SelectDeadlinePassed):
        check_deadline(150.0)
