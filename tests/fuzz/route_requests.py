"""Random hostile requests over the gateway's whole route table.

Shared by the in-process property test (test_fuzz_routes.py) and the standalone long-run
fuzzer (longrun.py). The route list is read from an app assembled exactly as the gateway
assembles its own (the route table plus every `add_*_routes`), so a new route is fuzzed
without touching this file. Requests are built with a seeded `random.Random`.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from starlette.routing import Route, WebSocketRoute

from tests.fuzz import strategies as fz
from tests.fuzz.harness import form_encode

Rnd = random.Random


@dataclass(frozen=True)
class RouteSpec:
    methods: tuple[str, ...]
    path: str  # a template: `{name}` and `{rest:path}` are filled per request


@dataclass
class FuzzRequest:
    route: str  # the template it came from (the report groups by it)
    method: str
    path: str
    params: list[tuple[str, str]] = field(default_factory=list)
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes | None = None

    def url(self) -> str:
        return self.path + ("?" + form_encode(self.params) if self.params else "")

    def describe(self) -> str:
        body = "" if self.body is None else f" body[{len(self.body)}]={self.body[:200]!r}"
        return f"{self.method} {self.url()[:600]} headers={self.headers}{body}"


def gateway_routes() -> list[RouteSpec]:
    """Every HTTP route the gateway app serves: the app svclog/serve/app.py builds from the table."""
    from svclog.config import default_config
    from svclog.serve.app import GatewaySettings, Services, build_app

    app = build_app(GatewaySettings.from_config(default_config()), Services())
    specs = []
    for route in app.routes:
        if isinstance(route, WebSocketRoute):
            continue  # the tail's GET twin is fuzzed; its WebSocket is covered by the unit tests
        if isinstance(route, Route):
            methods = tuple(sorted(m for m in (route.methods or {"GET"}) if m != "HEAD"))
            specs.append(RouteSpec(methods, route.path))
    return specs


# ---------------------------------------------------------------- values

NUMBERS = [
    "0",
    "1",
    "-1",
    "100",
    "5000",
    "1e19",
    "-1e19",
    "1e308",
    "NaN",
    "Inf",
    "-Inf",
    "nan",
    "0x10",
    "9223372036854775807",
    "-9223372036854775808",
    "99999999999999999999",
    "4294967296",
    "1.5",
    "1e-9",
    "",
    " ",
    "1_000",
    "+5",
]
DURATIONS = ["1m", "5s", "30s", "1h30m", "0", "-5m", "99999999999y", "1ms", "1y2w", "5m5m", "x", "1.5h", "10"]
TIMESTAMPS = [
    str(fz.NOW_S),
    str(fz.NOW_S * fz.NS),
    str(fz.NOW_S - 3600),
    f"{fz.NOW_S}.5",
    "2026-11-01T00:00:00Z",
    "2026-11-01T00:00:00.123456789+02:00",
    "0001-01-01T00:00:00Z",
    "2262-04-11T23:47:16.854775807Z",
    "9999-12-31T23:59:59Z",
    "1e19",
    "-1",
    "now",
    "0",
]
AMPLIFIERS = [
    '{app="web"} | line_format "{{ repeat 100000000 \\"x\\" }}"',
    '{app="web"} | line_format "{{ range 100000000 }}x{{ end }}"',
    '{app="web"} | label_format a="{{ printf \\"%10000000d\\" 1 }}"',
    '{app="web"} | line_format "{{ alignLeft 100000000 __line__ }}"',
    '{app="web"} | json | line_format "{{ regexReplaceAll \\"(.)\\" __line__ \\"$1$1$1$1$1$1$1$1\\" }}"',
    'sum by (msg) (count_over_time({app="web"} | json | line_format "{{ repeat 1000 __line__ }}" [1m]))',
    '{app="db"} | logfmt | unpack | json',
]
PARAM_NAMES = {
    "query": 6,
    "start": 4,
    "end": 4,
    "since": 2,
    "step": 3,
    "interval": 2,
    "limit": 3,
    "direction": 2,
    "time": 2,
    "match[]": 2,
    "match": 1,
    "targetLabels": 1,
    "aggregateBy": 1,
    "delay_for": 1,
    "request_id": 1,
    "force": 1,
    "mode": 1,
    "log_level": 1,
    "flush": 1,
    "delete_ring_tokens": 1,
    "terminate": 1,
    "forget": 1,
    "type": 1,
    "line_limit": 1,
    "field_limit": 1,
    "fields": 1,
    "labels": 1,
    "x": 1,
}
_NAMES, _WEIGHTS = list(PARAM_NAMES), list(PARAM_NAMES.values())


def query_value(rnd: Rnd) -> str:
    roll = rnd.random()
    if roll < 0.1:
        return rnd.choice(AMPLIFIERS)
    if roll < 0.55:
        return fz.query_text(rnd)
    if roll < 0.9:
        return fz.selector_text(rnd)
    return fz.text(rnd, 40)


def param_value(rnd: Rnd, name: str) -> str:
    roll = rnd.random()
    if roll < 0.08:
        return fz.text(rnd, 30)
    if name in ("query", "match[]", "match"):
        return query_value(rnd)
    if name in ("start", "end", "time"):
        return rnd.choice(TIMESTAMPS + NUMBERS)
    if name in ("step", "interval", "since", "delay_for"):
        return rnd.choice(DURATIONS + NUMBERS)
    if name in ("limit", "line_limit", "field_limit"):
        return rnd.choice(NUMBERS)
    if name == "direction":
        return rnd.choice(["forward", "backward", "FORWARD", "sideways", ""])
    if name in ("force", "flush", "delete_ring_tokens", "terminate"):
        return rnd.choice(["true", "false", "1", "0", "maybe", ""])
    if name == "log_level":
        return rnd.choice(["info", "debug", "warn", "error", "loud", ""])
    if name == "mode":
        return rnd.choice(["diffs", "defaults", "", "x"])
    return rnd.choice(NUMBERS + ["app", "app,env", "series", "labels", "ingester-0", "x" * 300])


def fill_path(rnd: Rnd, template: str) -> str:
    def segment(match: re.Match) -> str:
        if match.group(0).endswith(":path}"):
            parts = [
                rnd.choice(["ns", "ns/group", "a%2Fb", "..", "", "x" * 300, fz.text(rnd, 10)])
                for _ in range(rnd.randint(0, 3))
            ]
            return "/".join(quote(p, safe="%/", errors="surrogatepass") for p in parts)
        value = rnd.choice(["app", "env", "__name__", "x y", "..", "%2F", "\u00e9", "level", fz.text(rnd, 12)])
        return quote(value, safe="", errors="surrogatepass")

    return re.sub(r"\{[^}]+\}", segment, template)


def rule_body(rnd: Rnd) -> bytes:
    group = (
        'name: g{n}\ninterval: 1m\nrules:\n  - alert: A\n    expr: sum(rate({{app="web"}}[5m])) > {n}\n'
        "    for: 1m\n    labels:\n      severity: page\n"
        '    annotations:\n      summary: "{{{{ $labels.app }}}}"\n'
    ).format(n=rnd.randint(0, 9))
    roll = rnd.random()
    if roll < 0.3:
        return group.encode()
    if roll < 0.45:
        return (rnd.choice("[{") * rnd.choice([100, 10000])).encode()
    if roll < 0.55:
        return b"a: &x [" + b"*x," * 1000 + b"]"
    if roll < 0.65:
        return b"name: g\nrules:\n  - record: r\n    expr: " + query_value(rnd).encode("utf-8", "surrogatepass")
    return fz.mutate(rnd, group.encode())


def body_for(rnd: Rnd, method: str, path: str) -> tuple[bytes | None, list[tuple[str, str]]]:
    if method in ("GET", "DELETE", "OPTIONS"):
        return None, []
    if path.endswith("/push"):
        body, headers = fz.push_request(rnd, 8 << 20)
        return body, list(headers.items())
    if path.startswith("/otlp"):
        body, headers = fz.otlp_request(rnd)
        return body, list(headers.items())
    if "/rules" in path:
        return rule_body(rnd), [("Content-Type", rnd.choice(["application/yaml", "text/plain", ""]))]
    roll = rnd.random()
    if roll < 0.5:  # a form body: the handlers read POSTed parameters like query strings
        return form_encode(random_params(rnd)).encode(), [("Content-Type", "application/x-www-form-urlencoded")]
    if roll < 0.7:
        return json.dumps({"query": query_value(rnd)}).encode(), [("Content-Type", "application/json")]
    return bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 200))), []


def random_params(rnd: Rnd) -> list[tuple[str, str]]:
    names = rnd.choices(_NAMES, _WEIGHTS, k=rnd.randint(0, 6))
    if rnd.random() < 0.5:
        names = ["query", *names]
    return [(name, param_value(rnd, name)) for name in names]


def tenant_headers(rnd: Rnd) -> list[tuple[str, str]]:
    roll = rnd.random()
    if roll < 0.06:
        return []
    if roll < 0.1:  # several headers: refused on every route
        return [("X-Scope-OrgID", fz.tenant(rnd)), ("X-Scope-OrgID", fz.tenant(rnd))]
    return [("X-Scope-OrgID", rnd.choice(["fuzz", "fuzz-b"]) if rnd.random() < 0.6 else fz.tenant(rnd))]


def random_request(rnd: Rnd, spec: RouteSpec) -> FuzzRequest:
    method = rnd.choice(spec.methods)
    path = fill_path(rnd, spec.path)
    body, headers = body_for(rnd, method, spec.path)
    headers = tenant_headers(rnd) + headers
    if rnd.random() < 0.1:
        headers.append(("Accept", rnd.choice(["application/vnd.apache.parquet", "application/yaml", "*/*"])))
    return FuzzRequest(spec.path, method, path, random_params(rnd), headers, body)


def httpx_args(req: FuzzRequest) -> dict[str, Any]:
    """The request as httpx arguments; header values as bytes so hostile tenants reach the server."""
    headers = [(k.encode("latin-1"), v.encode("utf-8", "surrogatepass")) for k, v in req.headers]
    return {"method": req.method, "url": req.url(), "headers": headers, "content": req.body}


@dataclass
class Tally:
    """Counts by status class, slow answers and every 5xx with its request."""

    slow_s: float = 5.0
    by_class: dict[str, int] = field(default_factory=dict)
    by_route: dict[str, int] = field(default_factory=dict)
    slow: list[tuple[float, str]] = field(default_factory=list)
    errors: list[tuple[int, str, str]] = field(default_factory=list)
    seconds: dict[str, list[float]] = field(default_factory=dict)  # answer times by status class

    def add(self, req: FuzzRequest, status: int | None, seconds: float, text: str = "") -> None:
        klass = "error" if status is None else f"{status // 100}xx"
        self.by_class[klass] = self.by_class.get(klass, 0) + 1
        self.seconds.setdefault(klass, []).append(seconds)
        self.by_route[req.route] = self.by_route.get(req.route, 0) + 1
        if seconds > self.slow_s:
            self.slow.append((seconds, req.describe()))
        if status is None or status >= 500:
            self.errors.append((status or 0, req.describe(), text[:300]))

    @property
    def total(self) -> int:
        return sum(self.by_class.values())

    def report(self, title: str, seconds: float) -> str:
        lines = [
            f"== {title}: {self.total} requests over {len(self.by_route)} routes in {seconds:.1f} s",
            "   by status class: " + ", ".join(f"{k}={v}" for k, v in sorted(self.by_class.items())),
            "   answer time by class (median / p99 / max, s): "
            + ", ".join(
                f"{k} {_pct(v, 50):.3f} / {_pct(v, 99):.3f} / {max(v):.3f}" for k, v in sorted(self.seconds.items())
            ),
            f"   slower than {self.slow_s:g} s: {len(self.slow)}",
        ]
        lines += [f"     {s:.2f} s  {what}" for s, what in sorted(self.slow, reverse=True)[:50]]
        lines.append(f"   5xx / transport errors: {len(self.errors)}")
        lines += [f"     {status}  {what}\n        -> {text!r}" for status, what, text in self.errors]
        return "\n".join(lines)


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]
