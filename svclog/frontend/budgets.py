"""Read budgets checked before a query runs: `max_chunks_per_query`, `max_query_bytes_read`,
`max_querier_bytes_read`.

The index knows every chunk's size, so the frontend asks it (index stats: the chunks and bytes
of the streams each selector matches, store and ingesters) what a query would read, and
refuses a query over budget with a 400 before any chunk is fetched, as the reference's
frontend does. What the query reads is the sum over its selectors, each over its own window
(`[start - range - offset, end - offset]`, and a look-back before `start` for a plain log
selector). `max_querier_bytes_read` applies to each sub-query a querier would run (a time
piece; a shard reads about 1/n of its piece's streams), and is only worked out piece by piece
when the whole query is over it.

As in the reference, a log query without filters (`{app="x"}`, `{app="x"} | json`: it stops
at its line limit) is exempt from `max_query_bytes_read`. The reference accepts
`max_chunks_per_query` without enforcing it (its store hook returns 0); here it bounds the
chunks the index finds for the whole query, with the message of the reference's limiter.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

from svclog.config.limits import LimitsConfig
from svclog.gocompat.humanize import ibytes
from svclog.logql import ast
from svclog.logql.engine.guard import smallest_positive
from svclog.logql.engine.samples import leading_line_filters
from svclog.logql.rewrite.plan import Plan
from svclog.model import Matcher, ValidationError

# one selector over the time it reads: (matchers, from, through), nanoseconds
Window = tuple[tuple[Matcher, ...], int, int]

TOO_MANY_CHUNKS = "the query hit the max number of chunks limit (limit: {limit} chunks)"
QUERY_TOO_MANY_BYTES = (
    "the query would read too many bytes (query: {bytes}, limit: {limit}); consider adding more specific "
    "stream selectors or reduce the time range of the query"
)
QUERIER_TOO_MANY_BYTES = (
    "query too large to execute on a single querier: (query: {bytes}, limit: {limit}); consider adding more "
    "specific stream selectors, reduce the time range of the query, or adjust parallelization settings"
)
SHARD_TOO_MANY_BYTES = (
    "shard query is too large to execute on a single querier: (query: {bytes}, limit: {limit}); consider adding "
    "more specific stream selectors or reduce the time range of the query"
)
UNSHARDABLE_TOO_MANY_BYTES = (
    "un-shardable query too large to execute on a single querier: (query: {bytes}, limit: {limit}); consider "
    "adding more specific stream selectors or reduce the time range of the query"
)


class QueryTooLarge(ValidationError):
    """A read budget the index says the query would cross (HTTP 400)."""


@dataclass(frozen=True)
class ReadSize:
    chunks: int = 0
    bytes: int = 0

    def __add__(self, other: ReadSize) -> ReadSize:
        return ReadSize(self.chunks + other.chunks, self.bytes + other.bytes)


@dataclass(frozen=True)
class ReadBudget:
    max_chunks: int = 0
    max_query_bytes: int = 0
    max_querier_bytes: int = 0

    @classmethod
    def of(cls, limits: Iterable[LimitsConfig]) -> ReadBudget:
        """The strictest positive value of each limit over a (multi-tenant) query's tenants."""
        per_tenant = list(limits)
        return cls(
            smallest_positive(lim.max_chunks_per_query for lim in per_tenant),
            smallest_positive(lim.max_query_bytes_read for lim in per_tenant),
            smallest_positive(lim.max_querier_bytes_read for lim in per_tenant),
        )

    @property
    def active(self) -> bool:
        return self.max_chunks > 0 or self.max_query_bytes > 0 or self.max_querier_bytes > 0


def read_windows(expr: ast.Expr, start: int, end: int, lookback: int) -> list[Window]:
    """Each distinct selector of `expr` with the time it reads for evaluations in [start, end]."""
    return list(dict.fromkeys(window for window, _ in _window_queries(expr, start, end, lookback)))


def window_filters(plan: Plan, windows: Sequence[Window], lookback: int) -> list[tuple[ast.LineFilter, ...]]:
    """Per window of `windows` (whole_windows), the leading line filters every selector reading
    it starts with (the filters its selects hand down: the token index can rule chunks out for
    them); () where its selectors start without one or with different ones."""
    found: dict[Window, tuple[ast.LineFilter, ...] | None] = {}
    subs = plan.subqueries
    if subs:
        start = min(s.params.start for s in subs)
        end = max(s.params.end for s in subs)
        for sub in subs:
            for window, query in _window_queries(sub.expr, start, end, lookback):
                filters = leading_line_filters(query)
                if found.setdefault(window, filters) != filters:
                    found[window] = None
    return [found.get(window) or () for window in windows]


def _window_queries(expr: ast.Expr, start: int, end: int, lookback: int) -> list[tuple[Window, ast.LogQuery]]:
    """Each selector's query of `expr` with its window, as read_windows finds the windows."""
    if isinstance(expr, ast.LogQuery):
        return [((expr.selector.matchers, start - lookback, end), expr)]
    return [
        ((node.query.selector.matchers, start - node.range - node.offset, end - node.offset), node.query)
        for node in ast.walk(expr)
        if isinstance(node, ast.LogRange)
    ]


def step_reach(plan: Plan) -> int:
    """How far a metric range query's evaluation times reach past its windows' ends: the
    engine aligns them to the step (start down, end up: params.step_times); 0 for log and
    instant queries."""
    return max(
        (s.params.step for s in plan.subqueries if not s.params.instant and not isinstance(s.expr, ast.LogQuery)),
        default=0,
    )


def has_filter(expr: ast.Expr) -> bool:
    """A log query with a label filter or a non-empty line filter (the reference's HasFilter):
    one without runs as a limited query, exempt from `max_query_bytes_read`."""
    if not isinstance(expr, ast.LogQuery):
        return True
    for stage in expr.stages:
        if isinstance(stage, ast.LabelFilter):
            return True
        if isinstance(stage, ast.LineFilter):
            empty_match = stage.op in ("|=", "|~") and all(v.value == "" and not v.ip for v in stage.values)
            if not empty_match:
                return True
    return False


Sizes = Callable[[list[Window]], Awaitable[list[ReadSize]]]


def whole_windows(plan: Plan, lookback: int) -> list[Window]:
    """Each selector of the query over the whole range (sub-queries share their selectors)."""
    subs = plan.subqueries
    if not subs:
        return []  # answered without reading (`vector(1)`, `2 > bool 1`)
    start = min(s.params.start for s in subs)
    end = max(s.params.end for s in subs)
    found: dict[Window, None] = {}
    for sub in subs:
        found.update(dict.fromkeys(read_windows(sub.expr, start, end, lookback)))
    return list(found)


class BudgetCheck:
    """One query's checks. `sizes(windows)` asks the index what each window would read."""

    def __init__(self, budget: ReadBudget, plan: Plan, lookback: int, sharding: bool):
        self.budget = budget
        self.plan = plan
        self.lookback = lookback
        self.sharding = sharding  # shardable queries are split in shards (the messages say which)

    def whole_windows(self) -> list[Window]:
        return whole_windows(self.plan, self.lookback)

    def check_whole(self, sizes: Sequence[ReadSize]) -> bool:
        """Raise QueryTooLarge past the query's chunk or byte budget; True when the sub-queries
        must be sized one by one (the whole is over the per-querier budget)."""
        total = sum(sizes, ReadSize())
        budget = self.budget
        if budget.max_chunks > 0 and total.chunks > budget.max_chunks:
            raise QueryTooLarge(TOO_MANY_CHUNKS.format(limit=budget.max_chunks))
        filtered = any(has_filter(sub.expr) for sub in self.plan.subqueries)
        if budget.max_query_bytes > 0 and total.bytes > budget.max_query_bytes and filtered:
            raise QueryTooLarge(
                QUERY_TOO_MANY_BYTES.format(bytes=ibytes(total.bytes), limit=ibytes(budget.max_query_bytes))
            )
        return budget.max_querier_bytes > 0 and total.bytes > budget.max_querier_bytes

    def piece_windows(self) -> list[list[Window]]:
        """The windows of each sub-query, in plan order."""
        return [read_windows(s.expr, s.params.start, s.params.end, self.lookback) for s in self.plan.subqueries]

    def check_pieces(self, sizes: Sequence[Sequence[ReadSize]]) -> None:
        """Raise QueryTooLarge when one sub-query would read more than `max_querier_bytes_read`."""
        limit = self.budget.max_querier_bytes
        for sub, piece in zip(self.plan.subqueries, sizes):
            read = sum(piece, ReadSize()).bytes
            if sub.shard:
                read //= max(1, sub.shard[1])
            if read <= limit:
                continue
            if not self.sharding:
                template = QUERIER_TOO_MANY_BYTES
            elif sub.shard:
                template = SHARD_TOO_MANY_BYTES
            else:
                template = UNSHARDABLE_TOO_MANY_BYTES
            raise QueryTooLarge(template.format(bytes=ibytes(read), limit=ibytes(limit)))

    async def run(self, sizes: Sizes, whole: Sequence[ReadSize] | None = None) -> None:
        """Both checks: one index round for the whole query (`whole`: its sizes, when already
        known), a second only when its total is over the per-querier budget (each distinct
        window asked once)."""
        if whole is None:
            whole = await sizes(self.whole_windows())
        if not self.check_whole(whole):
            return
        pieces = self.piece_windows()
        distinct = list(dict.fromkeys(w for piece in pieces for w in piece))
        known = dict(zip(distinct, await sizes(distinct)))
        self.check_pieces([[known[w] for w in piece] for piece in pieces])
