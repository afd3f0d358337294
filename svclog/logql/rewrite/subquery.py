"""A sub-query of a planned query, and how a querier runs one.

A sub-query is an ordinary expression over a narrower time range, optionally
restricted to one shard of the streams (`fingerprint % count == index`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, replace

from svclog.logql import ast
from svclog.logql.engine.evaluator import evaluate
from svclog.logql.engine.params import QueryParams
from svclog.logql.engine.result import QueryResult
from svclog.logql.source import LogSource, SelectRequest, StreamBlock
from svclog.model import Labels, Matcher

Shard = tuple[int, int]  # (index, count)


@dataclass(frozen=True)
class SubQuery:
    expr: ast.Expr
    params: QueryParams
    shard: Shard | None = None

    def reading(self, read_bytes: int | None) -> SubQuery:
        """This sub-query told what the whole query's selectors read (None: unknown)."""
        if read_bytes is None:
            return self
        return replace(self, params=replace(self.params, read_bytes=read_bytes))


class ShardedSource:
    """A LogSource that asks its inner source for one shard of the streams only.

    The inner source must honour `SelectRequest.shard` (MemorySource does): the
    shard decides which partial result a stream lands in, so it is not a mere hint.
    """

    def __init__(self, inner: LogSource, shard: Shard):
        self.inner = inner
        self.shard = shard
        self.applies_line_filters = getattr(inner, "applies_line_filters", False)

    def select_logs(self, request: SelectRequest) -> Iterable[StreamBlock]:
        return self.inner.select_logs(replace(request, shard=self.shard))

    def select_series(self, matchers: tuple[Matcher, ...], start: int, end: int) -> Iterable[Labels]:
        index, count = self.shard
        return (lb for lb in self.inner.select_series(matchers, start, end) if lb.fingerprint() % count == index)


def evaluate_subquery(sub: SubQuery, source: LogSource) -> QueryResult:
    """Run one sub-query. The series limit is the merged result's business (Plan.merge):
    a partial may hold series that the full query filters out later."""
    if sub.shard is not None:
        source = ShardedSource(source, sub.shard)
    return evaluate(sub.expr, sub.params, source, max_series=sys.maxsize)
