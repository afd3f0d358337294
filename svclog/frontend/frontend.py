"""QueryFrontend: plans a query into sub-queries (time split x shards) and merges their results.

Plain class: the Serve deployment moves the sub-queries through the scheduler to the
queriers and hands the partial results back here. With a results cache, sub-queries it
already answered are taken from there and only the rest are sent out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from svclog.frontend.data_extent import empty_answer, plan_window, skippable
from svclog.frontend.results_cache import CacheCounters, ResultsCache
from svclog.gocompat.durations import format_go_duration
from svclog.logql import ast
from svclog.logql.engine.json_codec import answer_to_json
from svclog.logql.rewrite.plan import Plan, plan_query
from svclog.logql.source import SourceStats
from svclog.model import Span, ValidationError, now_ns
from svclog.querier.querier import PartialResult, prepare_query
from svclog.querier.request import RangeRequest
from svclog.querier.stats import build_stats, merge_source_stats


@dataclass(frozen=True)
class FrontendSettings:
    split_queries_by_interval: int = 3600 * 1_000_000_000
    shards: int = 1
    max_entries_limit_per_query: int = 5000
    max_query_series: int = 500
    max_query_length: int = 0  # ns; 0 = unlimited


@dataclass
class CacheLookup:
    """What the results cache knew of a plan: hits by sub-query index, keys to store the rest under."""

    hits: dict[int, PartialResult]
    keys: dict[int, str]
    counters: CacheCounters


class QueryFrontend:
    def __init__(
        self,
        settings: FrontendSettings,
        results_cache: ResultsCache | None = None,
        deletes_digest: Callable[[str], str] = lambda tenant: "",
    ):
        self.settings = settings
        self.results_cache = results_cache
        self.deletes_digest = deletes_digest

    def plan(self, request: RangeRequest, busy: int = 0) -> Plan:
        """The query's sub-queries; `busy` is how many other queries this frontend runs now."""
        self._check_length(request)
        expr, params = prepare_query(request, self.settings.max_entries_limit_per_query)
        return plan_query(
            expr,
            params,
            split_interval_ns=self._split_interval(request),
            shards=self._shards(expr, busy),
            max_series=self.settings.max_query_series,
        )

    def _split_interval(self, request: RangeRequest) -> int:
        """Time pieces pay for the results cache (aligned pieces are reused) and for ranges longer
        than an interval (parallel work). A range within one interval that crosses a boundary would
        only become two half pieces: the shards already give its parallelism, and each sub-query
        costs a scheduler round trip and a select of its own. Instant queries evaluate one point."""
        interval = self.settings.split_queries_by_interval
        if request.instant:
            return 0
        if self.results_cache is None and request.end - request.start <= interval:
            return 0
        return interval

    def _shards(self, expr: ast.Expr, busy: int) -> int:
        """Shards only as wide as the queriers left idle by the other queries in flight: on busy
        queriers a shard adds a sub-query's fixed cost and no parallelism. A limited log query is
        not sharded: each shard would read `limit` entries of its own, while one querier reads in
        the query's direction and stops once the limit is certain."""
        if ast.is_log_query(expr):
            return 1
        return max(1, self.settings.shards - busy)

    def _check_length(self, request: RangeRequest) -> None:
        limit = self.settings.max_query_length
        length = request.end - request.start
        if not request.instant and limit > 0 and length > limit:
            raise ValidationError(
                f"the query time range exceeds the limit (query length: "
                f"{format_go_duration(length)}, limit: {format_go_duration(limit)})"
            )

    def lookup(self, tenants: Sequence[str], plan: Plan, now: int | None = None) -> CacheLookup:
        found = CacheLookup({}, {}, CacheCounters())
        cache = self.results_cache
        if cache is None:
            return found
        now = now_ns() if now is None else now
        cacheable = [i for i, sub in enumerate(plan.subqueries) if cache.cacheable(sub, now)]
        if not cacheable:
            return found
        digest = "|".join(self.deletes_digest(t) for t in tenants)
        for i in cacheable:
            key = cache.key(tuple(tenants), plan.subqueries[i], digest)
            result = cache.get(key, found.counters)
            if result is None:
                found.keys[i] = key
            else:
                found.hits[i] = PartialResult(result, SourceStats())
        return found

    @staticmethod
    def read_window(plan: Plan) -> Span | None:
        """The window whose data spans decide which sub-queries need not be sent (None: none can)."""
        return plan_window(plan.subqueries)

    @staticmethod
    def answered_without_data(plan: Plan, spans: Sequence[Span] | None) -> dict[int, PartialResult]:
        """Sub-queries whose read window misses every span holding data (`spans`, from
        `Querier.data_spans`; None: unknown), by index, each with the answer a querier gives
        over no entries. A sub-query whose empty answer fails is left to the querier."""
        found: dict[int, PartialResult] = {}
        for i, sub in enumerate(plan.subqueries):
            if not skippable(sub, spans):
                continue
            try:
                found[i] = PartialResult(empty_answer(sub), SourceStats())
            except Exception:  # noqa: BLE001 - its querier raises the same error (or proves it wrong)
                continue
        return found

    def remember(self, lookup: CacheLookup, fresh: dict[int, PartialResult]) -> None:
        if self.results_cache is None:
            return
        for i, key in lookup.keys.items():
            if i in fresh:
                self.results_cache.put(key, fresh[i].result, lookup.counters)

    def respond(
        self,
        plan: Plan,
        partials: list[PartialResult],
        exec_seconds: float,
        queue_seconds: float,
        cache: CacheCounters | None = None,
        encoded_values: bool = False,
    ) -> dict:
        """The response `data`: merged result and the summed stats of every sub-query (with
        `encoded_values`, a streams answer's values as JSON text: json_codec.answer_to_json)."""
        data = answer_to_json(plan.merge([p.result for p in partials]), encoded_values)
        data["stats"] = build_stats(merge_source_stats([p.stats for p in partials]), exec_seconds, queue_seconds)
        if cache is not None:
            data["stats"]["cache"] = {
                "result": {
                    "entriesRequested": cache.requests,
                    "entriesFound": cache.hits,
                    "entriesStored": cache.stored,
                    "bytesSent": cache.bytes_sent,
                    "requests": cache.requests,
                }
            }
        return data
