"""QueryFrontend: plans a query into sub-queries (time split x shards) and merges their results.

Plain class: the Serve deployment moves the sub-queries through the scheduler to the
queriers and hands the partial results back here.
"""
from __future__ import annotations

from dataclasses import dataclass

from svclog.logql.engine.json_codec import result_to_json
from svclog.logql.rewrite.plan import Plan, plan_query
from svclog.querier.querier import PartialResult, prepare_query
from svclog.querier.request import RangeRequest
from svclog.querier.stats import build_stats, merge_source_stats


@dataclass(frozen=True)
class FrontendSettings:
    split_queries_by_interval: int = 3600 * 1_000_000_000
    shards: int = 1
    max_entries_limit_per_query: int = 5000
    max_query_series: int = 500


class QueryFrontend:
    def __init__(self, settings: FrontendSettings):
        self.settings = settings

    def plan(self, request: RangeRequest) -> Plan:
        expr, params = prepare_query(request, self.settings.max_entries_limit_per_query)
        # instant queries evaluate one point: splitting them buys nothing
        split = 0 if request.instant else self.settings.split_queries_by_interval
        return plan_query(expr, params, split_interval_ns=split, shards=self.settings.shards,
                          max_series=self.settings.max_query_series)

    def respond(self, plan: Plan, partials: list[PartialResult], exec_seconds: float,
                queue_seconds: float) -> dict:
        """The response `data`: merged result and the summed stats of every sub-query."""
        data = result_to_json(plan.merge([p.result for p in partials]))
        data["stats"] = build_stats(merge_source_stats([p.stats for p in partials]), exec_seconds, queue_seconds)
        return data
