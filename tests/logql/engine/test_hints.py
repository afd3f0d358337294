"""Label hints change how much work a query does, never its answer."""

from __future__ import annotations

import json
import random

import pytest

from svclog.logql import ast
from svclog.logql.engine import evaluator
from svclog.logql.engine.hints import parser_labels, series_label_hints
from svclog.logql.engine.json_codec import result_to_json
from svclog.logql.engine.memory_source import MemorySource
from svclog.logql.engine.params import QueryParams
from svclog.logql.parser import parse
from svclog.model import NS, Labels

QUERIES = [
    'sum by (app) (count_over_time({env="prod"} | logfmt | duration > 100ms [1m]))',
    'quantile_over_time(0.99, {env="prod"} | logfmt | unwrap duration(duration) [5m]) by (app)',
    'sum(rate({env="prod"} | logfmt | lvl="error" [1m]))',
    'sum by (lvl) (bytes_over_time({env="prod"} | logfmt [1m]))',
    'sum by (app, lvl) (count_over_time({env="prod"} |= "a" | logfmt | lvl=~"e.*" [2m]))',
    'max by (app) (count_over_time({env="prod"} | logfmt [1m]))',
    'count by (app) (count_over_time({env="prod"} | logfmt | lvl="info" [1m]))',
    'sum by (app) (sum_over_time({env="prod"} | logfmt | unwrap size | __error__="" [1m]))',
    'sum by (app) (count_over_time({env="prod"} | logfmt | app_extracted="x" [1m]))',
    'avg_over_time({env="prod"} | logfmt | unwrap size | __error__="" [1m]) by (lvl)',
    'sum by (app) (count_over_time({env="prod"} | logfmt | duration > 1s [1m]))',
    'sum by (app) (count_over_time({env="prod"} | json | lvl="error" | __error__="" [1m]))',
    'sum by (app, __error__) (count_over_time({env="prod"} | json [1m]))',
    'sum by (app) (count_over_time({env="prod"} | json [1m]))',
    'quantile_over_time(0.5, {env="prod"} | json | __error__="" | unwrap size [5m]) by (lvl)',
]


def _source(seed: int) -> MemorySource:
    rnd = random.Random(seed)
    streams = {}
    for app in ("api", "auth"):
        for pod in range(3):
            entries = []
            for i in range(300):
                duration = rnd.choice(["5ms", "150ms", "2s", "1.5s", "oops", ""])
                line = rnd.choice(
                    [
                        (
                            f'lvl={rnd.choice(["info", "error"])} msg="a b" duration={duration} size={rnd.randint(0, 999)} '
                            f"trace={rnd.getrandbits(32):x}"
                        ),
                        f'lvl=info msg="escaped \\"q\\"" duration={duration} app=x',
                        f"broken=a=b duration={duration} lvl=error",
                        "plain text line",
                        f'{{"lvl":"{rnd.choice(["info", "error"])}","duration":"{duration}","size":{rnd.randint(0, 9)}}}',
                    ]
                )
                entries.append((i * 6 * NS + rnd.randint(0, NS), line))
            streams[Labels.from_dict({"app": app, "env": "prod", "pod": str(pod)})] = entries
    return MemorySource(streams)


def _answer(query: str, source: MemorySource):
    params = QueryParams(start=0, end=1800 * NS, step=60 * NS)
    try:
        data = result_to_json(evaluator.evaluate(parse(query), params, source))
    except Exception as err:  # noqa: BLE001 - an error is an answer too
        return type(err).__name__
    # values compare as floats: sums over fewer, larger series may round in the last digit
    return sorted(
        (json.dumps(s["metric"], sort_keys=True), [(t, pytest.approx(float(v), rel=1e-12)) for t, v in s["values"]])
        for s in data["result"]
    )


@pytest.mark.parametrize("query", QUERIES)
def test_answers_with_hints_equal_answers_without(query, monkeypatch):
    source = _source(7)
    hinted = _answer(query, source)
    monkeypatch.setattr(evaluator, "series_label_hints", lambda expr: {})
    assert _answer(query, source) == hinted


def test_hints_only_for_grouped_or_summed_additive_ranges():
    def hint(query):
        expr = parse(query)
        found = series_label_hints(expr)
        ranges = [n for n in ast.walk(expr) if isinstance(n, ast.RangeAggregation)]
        return [found.get(id(r)) for r in ranges]

    assert hint('sum by (app) (count_over_time({a="b"} | logfmt [1m]))') == [frozenset({"app"})]
    assert hint('sum(rate({a="b"}[1m]))') == [frozenset()]
    assert hint('quantile_over_time(0.9, {a="b"} | logfmt | unwrap x [1m]) by (app)') == [frozenset({"app"})]
    assert hint('max by (app) (count_over_time({a="b"}[1m]))') == [None]
    assert hint('sum by (app) (max_over_time({a="b"} | unwrap x [1m]))') == [None]
    assert hint('sum without (app) (count_over_time({a="b"}[1m]))') == [None]
    assert hint('count_over_time({a="b"}[1m])') == [None]


def test_parser_labels_cover_filters_and_unwrap_or_give_up():
    def needed(query, keep=frozenset({"app"})):
        expr = parse(query)
        log_range = next(n for n in ast.walk(expr) if isinstance(n, ast.LogRange))
        return parser_labels(log_range, keep)

    assert needed('rate({a="b"} | logfmt | d > 1s | x="y" [1m])') == {"app", "d", "x"}
    assert needed('sum_over_time({a="b"} | json | unwrap n | __error__="" [1m])') == {"app", "n"}
    assert needed('rate({a="b"} | logfmt | line_format "{{.x}}" [1m])') is None
    assert needed('rate({a="b"} | logfmt | json [1m])') is None
    assert needed('rate({a="b"} | regexp "(?P<x>.)" [1m])') is None
