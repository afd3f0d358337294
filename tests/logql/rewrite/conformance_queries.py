"""The conformance cases that run a LogQL query and expect 200, as (name, tenants, expr, params)."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from svclog.logql import ast
from svclog.logql.engine.memory_source import MemorySource
from svclog.logql.engine.params import QueryParams
from svclog.logql.parser import parse
from svclog.logql.source import LogSource
from svclog.model import NS, SvcError, parse_prom_duration, parse_step, parse_tenants, parse_timestamp

CONFORMANCE_DIR = Path(os.environ.get("SVCLOG_CONFORMANCE_DIR", "/work/shared/conformance"))
QUERY_PATHS = {"/api/v1/query": True, "/api/v1/query_range": False}  # path -> instant


@dataclass(frozen=True)
class QueryCase:
    name: str
    tenants: tuple[str, ...]
    text: str
    expr: ast.Expr
    params: QueryParams


def _expects_ok(expect: dict) -> bool:
    status = expect.get("status", 200)
    return status == 200 or (isinstance(status, list) and 200 in status)


def _raw_cases() -> list[dict]:
    out = []
    for path in sorted((CONFORMANCE_DIR / "cases").rglob("*")):
        if path.suffix == ".json":
            out.append(json.loads(path.read_text()))
        elif path.suffix == ".jsonl":
            out += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return out


def _params(args: dict[str, str], instant: bool) -> QueryParams:
    """The query parameters as the dev server reads them."""
    limit = int(args.get("limit") or 100)
    direction = (args.get("direction") or "backward").lower()
    now = time.time_ns()
    if instant:
        return QueryParams.for_instant(parse_timestamp(args.get("time"), now), limit, direction)
    end = parse_timestamp(args.get("end"), now)
    since = parse_prom_duration(args["since"]) if args.get("since") else 3600 * NS
    start = parse_timestamp(args.get("start"), end - since)
    step = parse_step(args["step"]) if args.get("step") else None
    interval = parse_step(args["interval"]) if args.get("interval") else None
    return QueryParams.for_range(start, end, step, interval, limit, direction)


def query_cases(expect_ok: bool = True) -> list[QueryCase]:
    """Cases expecting 200 (or, with expect_ok False, an error) whose query parses."""
    cases = []
    for raw in _raw_cases():
        path = raw.get("path", "")
        for prefix in ("/svc/", "/loki/"):
            if path.startswith(prefix):
                path = "/" + path[len(prefix) :]
        if path not in QUERY_PATHS or _expects_ok(raw.get("expect", {})) != expect_ok:
            continue
        case = _case(raw, dict(raw.get("params") or []) | dict(raw.get("form") or []), QUERY_PATHS[path])
        if case is not None:
            cases.append(case)
    return cases


def _case(raw: dict, args: dict[str, str], instant: bool) -> QueryCase | None:
    if not args.get("query"):
        return None
    try:
        expr = parse(args["query"])
        params = _params(args, instant)
        tenants = tuple(parse_tenants((raw.get("headers") or {}).get("X-Scope-OrgID"), auth_enabled=True))
    except (SvcError, ValueError):
        return None  # a case the parser rejects is the conformance suite's business
    return QueryCase(raw["name"], tenants, args["query"], expr, params)


def load_sources() -> dict[str, MemorySource]:
    from tools.logql_devserver import load_dataset

    return load_dataset()


def source_for(sources: dict[str, MemorySource], tenants: tuple[str, ...]) -> LogSource:
    from tools.logql_devserver import TenantUnionSource

    if len(tenants) == 1:
        return sources.get(tenants[0], MemorySource())
    return TenantUnionSource({t: sources.get(t, MemorySource()) for t in tenants})
