#!/usr/bin/env python3
"""Tiny LogQL dev server (a development tool, not product code).

Loads the conformance data set into one MemorySource per tenant and answers the
query endpoints so the offline conformance runner can be pointed at it:

    python tools/logql_devserver.py --port 3199 &
    python /work/shared/conformance/check.py --url http://127.0.0.1:3199 --no-push --only unwrap

Serves GET/POST /svc/api/v1/query_range, /svc/api/v1/query and
/svc/api/v1/format_query (also under /loki/). X-Scope-OrgID may name several
tenants (`a|b`); their streams then carry a `__tenant_id__` label.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.parse
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from svclog.logql.engine.evaluator import evaluate
from svclog.logql.engine.json_codec import result_to_json
from svclog.logql.engine.memory_source import MemorySource
from svclog.logql.engine.params import QueryParams
from svclog.logql.source import SelectRequest, StreamBlock
from svclog.model import (
    NS,
    Labels,
    Matcher,
    SvcError,
    ValidationError,
    labels_match,
    parse_prom_duration,
    parse_step,
    parse_tenants,
    parse_timestamp,
)

TENANT_LABEL = "__tenant_id__"
DATASET_DIR = "/work/shared/conformance"


class TenantUnionSource:
    """Several tenants' sources as one; streams gain `__tenant_id__` and can be selected by it."""

    def __init__(self, sources: dict[str, MemorySource]):
        self.sources = sources

    def _split(self, matchers: tuple[Matcher, ...]) -> tuple[list[Matcher], tuple[Matcher, ...]]:
        tenant = [m for m in matchers if m.name == TENANT_LABEL]
        return tenant, tuple(m for m in matchers if m.name != TENANT_LABEL)

    @staticmethod
    def _relabel(labels: Labels, tenant: str) -> Labels:
        items = labels.to_dict()
        if TENANT_LABEL in items:
            items["original_" + TENANT_LABEL] = items.pop(TENANT_LABEL)
        items[TENANT_LABEL] = tenant
        return Labels.from_dict(items)

    def select_logs(self, request: SelectRequest) -> Iterable[StreamBlock]:
        tenant_matchers, rest = self._split(request.matchers)
        for tenant, source in sorted(self.sources.items()):
            if not all(m.matches(tenant) for m in tenant_matchers):
                continue
            sub = SelectRequest(rest, request.start, request.end, request.line_filters, request.shard)
            for block in source.select_logs(sub):
                yield StreamBlock(self._relabel(block.labels, tenant), block.ts, block.line, block.metadata)

    def select_series(self, matchers: tuple[Matcher, ...], start: int, end: int) -> Iterable[Labels]:
        for tenant, source in sorted(self.sources.items()):
            for labels in source.select_series((), start, end):
                relabelled = self._relabel(labels, tenant)
                if labels_match(relabelled, matchers):
                    yield relabelled


def load_dataset() -> dict[str, MemorySource]:
    sys.path.insert(0, DATASET_DIR)
    import dataset  # type: ignore[import-not-found]

    out = {}
    for tenant, streams in dataset.build().items():
        source = MemorySource()
        for stream in streams:
            source.add(stream["stream"], [(int(v[0]), v[1], v[2] if len(v) > 2 else None) for v in stream["values"]])
        out[tenant] = source
    return out


def _parse_query(text: str):
    from svclog.logql.parser import parse

    return parse(text)


class Handler(BaseHTTPRequestHandler):
    sources: ClassVar[dict[str, MemorySource]] = {}

    def log_message(self, fmt: str, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._handle(urllib.parse.urlsplit(self.path).query)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        query = urllib.parse.urlsplit(self.path).query
        self._handle("&".join(p for p in (query, body) if p))

    def _handle(self, raw: str) -> None:
        path = urllib.parse.urlsplit(self.path).path
        for prefix in ("/loki/", "/svc/"):
            if path.startswith(prefix):
                path = "/" + path[len(prefix) :]
        args = dict(urllib.parse.parse_qsl(raw, keep_blank_values=True))
        try:
            if path == "/api/v1/query_range":
                self._reply(200, {"status": "success", "data": self._query(args, instant=False)})
            elif path == "/api/v1/query":
                self._reply(200, {"status": "success", "data": self._query(args, instant=True)})
            elif path == "/api/v1/format_query":
                from svclog.logql.printer import format_query  # type: ignore[import-not-found]

                self._reply(200, {"status": "success", "data": format_query(_parse_query(args.get("query", "")))})
            else:
                self._reply(404, {"status": "error", "error": f"unknown path {path}"})
        except SvcError as err:
            self._reply(err.status, {"status": "error", "errorType": "bad_data", "error": str(err)})
        except Exception as err:  # noqa: BLE001 - a dev tool: show the crash to the caller
            self._reply(500, {"status": "error", "error": f"{type(err).__name__}: {err}"})

    def _source(self):
        tenants = parse_tenants(self.headers.get("X-Scope-OrgID"), auth_enabled=True)
        if len(tenants) == 1:
            return self.sources.get(tenants[0], MemorySource())
        return TenantUnionSource({t: self.sources.get(t, MemorySource()) for t in tenants})

    def _query(self, args: dict[str, str], instant: bool) -> dict:
        source = self._source()
        text = args.get("query")
        if not text:
            raise ValidationError("query must be supplied")
        expr = _parse_query(text)
        limit = int(args.get("limit") or 100)
        direction = (args.get("direction") or "backward").lower()
        now = time.time_ns()
        if instant:
            params = QueryParams.for_instant(parse_timestamp(args.get("time"), now), limit, direction)
        else:
            end = parse_timestamp(args.get("end"), now)
            since = parse_prom_duration(args["since"]) if args.get("since") else 3600 * NS
            start = parse_timestamp(args.get("start"), end - since)
            step = parse_step(args["step"]) if args.get("step") else None
            interval = parse_step(args["interval"]) if args.get("interval") else None
            params = QueryParams.for_range(start, end, step, interval, limit, direction)
        result = result_to_json(evaluate(expr, params, source))
        result["stats"] = {}
        return result

    def _reply(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=3199)
    args = parser.parse_args()
    Handler.sources = load_dataset()
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    print(f"logql devserver on http://{args.host}:{args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
