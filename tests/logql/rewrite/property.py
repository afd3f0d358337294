"""The property every plan must keep: merged partials == the un-split answer."""

from __future__ import annotations

import math

from svclog.logql import ast
from svclog.logql.engine.evaluator import evaluate
from svclog.logql.engine.json_codec import result_to_json
from svclog.logql.engine.params import QueryParams
from svclog.logql.rewrite import evaluate_subquery, plan_query
from svclog.logql.source import LogSource
from svclog.model import SvcError

# Sums of fractions re-associated across shards (sum of rates) and window sums over a
# different prefix (time pieces) may differ in the last bits; nothing else may differ.
REL_TOL = 1e-12


def answer(run) -> dict | tuple[str, str]:
    try:
        return result_to_json(run())
    except SvcError as err:
        return (type(err).__name__, str(err))


def unsplit(expr: ast.Expr, params: QueryParams, source: LogSource) -> dict | tuple[str, str]:
    return answer(lambda: evaluate(expr, params, source))


def planned(
    expr: ast.Expr, params: QueryParams, source: LogSource, interval_ns: int, shards: int
) -> dict | tuple[str, str]:
    def run():
        plan = plan_query(expr, params, split_interval_ns=interval_ns, shards=shards)
        return plan.merge([evaluate_subquery(sub, source) for sub in plan.subqueries])

    return answer(run)


def differences(want: object, got: object) -> list[str]:
    """Where two answers differ: structure, labels, timestamps and lines exactly; sample
    values (strings in the JSON) exactly or within REL_TOL."""
    samples = isinstance(want, dict) and want.get("resultType") != "streams"
    return _diff(want, got, "", samples)


def _diff(want: object, got: object, path: str, samples: bool) -> list[str]:
    if isinstance(want, dict) and isinstance(got, dict):
        if want.keys() != got.keys():
            return [f"{path}: keys {sorted(want)} != {sorted(got)}"]
        return [d for k in want for d in _diff(want[k], got[k], f"{path}.{k}", samples)]
    if isinstance(want, (list, tuple)) and isinstance(got, (list, tuple)):
        if len(want) != len(got) or type(want) is not type(got):
            return [f"{path}: {len(want)} items != {len(got)} items ({str(want)[:200]} / {str(got)[:200]})"]
        return [d for i, (a, b) in enumerate(zip(want, got)) for d in _diff(a, b, f"{path}[{i}]", samples)]
    if want == got or (samples and path.endswith("[1]") and _close(want, got)):
        return []
    return [f"{path}: {want!r} != {got!r}"]


def _close(a: object, b: object) -> bool:
    try:
        x, y = float(a), float(b)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return math.isfinite(x) and math.isfinite(y) and abs(x - y) <= REL_TOL * max(abs(x), abs(y))


def up_to_ties(answer: object, limit: int, forward: bool) -> object:
    """An answer with the choice among tied candidates forgotten, for queries whose
    un-split answer depends on the order the source yields streams in:
    - topk/bottomk: which of several equal-valued series is kept -> per step, the
      sorted values only;
    - logs of streams collapsed to one label set (drop/keep): the order of entries with
      one timestamp, and which of them a limit cuts -> lines sorted per (labels, ts),
      without the last timestamp when the limit was reached."""
    if not isinstance(answer, dict):
        return answer
    if answer["resultType"] == "streams":
        groups: dict[tuple, list[str]] = {}
        for stream in answer["result"]:
            for ts, line in stream["values"]:
                groups.setdefault((tuple(sorted(stream["stream"].items())), int(ts)), []).append(line)
        if groups and sum(len(v) for v in groups.values()) >= limit:
            edge = max(ts for _, ts in groups) if forward else min(ts for _, ts in groups)
            groups = {k: v for k, v in groups.items() if k[1] != edge}
        return sorted((k, sorted(v)) for k, v in groups.items())
    per_step: dict[object, list[str]] = {}
    rows = answer["result"] if answer["resultType"] in ("matrix", "vector") else []
    for row in rows:
        for ts, value in row.get("values") or [row["value"]]:
            per_step.setdefault(ts, []).append(value)
    return sorted((ts, sorted(v)) for ts, v in per_step.items())
