"""The querier's start-up warm-up: every query of it answers over its own lines, and a failure is
logged, never raised (a cold path is slower, not wrong)."""

from __future__ import annotations

import logging

from svclog.logql.engine.evaluator import evaluate
from svclog.logql.engine.json_codec import result_to_json
from svclog.model import NS
from svclog.querier import warmup
from svclog.querier.querier import prepare_query
from svclog.querier.request import RangeRequest


def test_every_warm_up_query_answers():
    assert warmup.warm_up() == len(warmup.WARM_QUERIES)


def test_the_warm_lines_exercise_what_the_queries_filter_on():
    """Not a vacuous warm-up: the parsers' label filters keep some lines and drop others."""
    source = warmup.warm_source()
    start = 1_700_000_000 * NS
    request = RangeRequest(
        query='sum(count_over_time({app="warm"} | logfmt | duration > 100ms [1h]))',
        start=start + 60 * NS,
        end=start + 60 * NS,
        step=NS,
        interval=None,
        limit=0,
        direction="backward",
        instant=True,
    )
    expr, params = prepare_query(request, max_entries_limit=0)
    answer = result_to_json(evaluate(expr, params, source))
    # logfmt durations are i * 7 ms for i < 40: over 100 ms for i >= 15, 25 of the 40 lines
    assert [series["value"][1] for series in answer["result"]] == ["25"]


def test_a_failing_query_is_logged_and_the_rest_still_run(monkeypatch, caplog):
    monkeypatch.setattr(warmup, "WARM_QUERIES", ('sum(rate({app="warm"}[1m]))', "not logql {", '{app="warm"}'))
    with caplog.at_level(logging.DEBUG, logger="svclog"):
        assert warmup.warm_up() == 2
    assert "not logql {" in caplog.text
