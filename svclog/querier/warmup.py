"""A querier's query path, warmed once at start so that a user's first query does not pay for it.

A fresh service's first query (a one-minute `| logfmt | duration > 100ms` count over 6669 lines,
after a 1M-line ingest) took 382-390 ms where the next ones took 125-145 ms: modules imported on
first use (the stages, numpy's masked arrays through Arrow's conversions), first calls into
Arrow's kernels, and the gateway's parser tables (built at start too, parser.build_tables).
Evaluating one small query of each common shape over a few lines in memory, on a thread at
start while nobody waits, took that first query to 266-269 ms.
"""

from __future__ import annotations

import json
import logging

from svclog.logql.engine.evaluator import evaluate
from svclog.logql.engine.json_codec import result_to_json
from svclog.logql.engine.memory_source import MemorySource
from svclog.model import NS, Labels
from svclog.querier.querier import prepare_query
from svclog.querier.request import RangeRequest

log = logging.getLogger("svclog")

_T0 = 1_700_000_000 * NS
_LINES = 40
# One of each common shape: line filters (substring, regex), both hinted parsers with label
# filters on a duration and a string, unwrap, a plain count and byte sum, and a log query.
WARM_QUERIES = (
    'sum by (app) (count_over_time({app="warm"} |= "error" [1m]))',
    'sum by (app) (rate({app="warm"} |~ "status=5.." [1m]))',
    'sum by (app) (count_over_time({app="warm"} | logfmt | duration > 100ms [1m]))',
    'sum by (app) (count_over_time({app="warm"} | json | level="error" [1m]))',
    'quantile_over_time(0.99, {app="warm"} | logfmt | unwrap duration(duration) [1m]) by (app)',
    'topk(5, sum by (format) (bytes_over_time({app="warm"}[1m])))',
    'sum by (level) (count_over_time({app="warm"}[1m]))',
    '{app="warm"} |= "error" | logfmt',
)


def warm_source() -> MemorySource:
    """A few logfmt and JSON lines a second apart, some of them errors."""
    logfmt, json_lines = [], []
    for i in range(_LINES):
        level = "error" if i % 4 == 0 else "info"
        ts = _T0 + i * NS
        logfmt.append(
            (ts, f'level={level} msg="served {i}" status={500 if i % 4 == 0 else 200} duration={i * 7}ms bytes={i}')
        )
        json_lines.append((ts, json.dumps({"level": level, "msg": f"job {i}", "duration_ms": i * 7})))
    return MemorySource(
        {
            Labels.from_dict({"app": "warm", "format": "logfmt"}): logfmt,
            Labels.from_dict({"app": "warm", "format": "json"}): json_lines,
        }
    )


def warm_up() -> int:
    """Evaluate WARM_QUERIES over `warm_source`; the number that answered (a failure is logged,
    never raised: a cold path is slower, not wrong)."""
    source = warm_source()
    answered = 0
    for text in WARM_QUERIES:
        # the limit only matters to the log query; with no entries limit it is never refused
        request = RangeRequest(
            query=text, start=_T0, end=_T0 + _LINES * NS, step=10 * NS, interval=None, limit=100, direction="backward"
        )
        try:
            expr, params = prepare_query(request, max_entries_limit=0)
            result_to_json(evaluate(expr, params, source))
            answered += 1
        except Exception:  # noqa: BLE001 - see the docstring
            log.debug("warm-up query failed: %s", text, exc_info=True)
    return answered
