"""Real client libraries from PyPI against the running service, each read back exactly.

python-logging-loki and loki-logger-handler push through the standard `logging` module,
the OpenTelemetry SDK exports over OTLP/HTTP to `<addr>/otlp`, a Grafana-style health
check runs `vector(1)+vector(1)`, and svclog's own client, CLI and Ray driver example
run against the same service.
"""

from __future__ import annotations

import json
import logging
import runpy
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest

from svclog.cli import main as cli_main
from svclog.client import Client, ClientError

pytestmark = pytest.mark.ray
NS = 1_000_000_000
TENANT = "real-clients"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _run_id() -> str:
    return uuid.uuid4().hex[:10]


def _logger(name: str, handler: logging.Handler) -> logging.Logger:
    logger = logging.getLogger(f"svclog.e2e.{name}")
    logger.handlers = [handler]
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger


def _read_back(client: Client, query: str, start: int, want: int, timeout: float = 15.0) -> list[dict]:
    """Streams of `query` from `start` on, once `want` entries are there (clients may send asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        data = client.query_range(query, start=start, end=time.time_ns() + NS, direction="forward", limit=1000)
        got = sum(len(stream["values"]) for stream in data["result"])
        if got >= want or time.monotonic() > deadline:
            return data["result"]
        time.sleep(0.1)


def _entries(streams: list[dict]) -> list[tuple[dict, str]]:
    rows = [(int(ts), stream["stream"], line) for stream in streams for ts, line in stream["values"]]
    return [(labels, line) for _, labels, line in sorted(rows, key=lambda row: row[0])]


def test_python_logging_loki_handler(svc):
    import logging_loki

    run = _run_id()
    handler = logging_loki.LokiHandler(url=svc.url + "/loki/api/v1/push", tags={"app": "pll", "run": run}, version="1")
    # The library has no header option: the tenant goes on the requests session it posts with.
    handler.emitter.session.headers["X-Scope-OrgID"] = TENANT
    failures = []
    handler.handleError = failures.append  # a failed push must fail the test, not print to stderr
    logger = _logger(f"pll.{run}", handler)
    start = time.time_ns() - NS
    logger.info("user logged in")
    logger.warning("disk at %d%%", 91, extra={"tags": {"disk.name": "sda"}})
    logger.error("payment failed")
    assert failures == []

    streams = _read_back(Client(svc.url, tenant=TENANT, timeout=120), f'{{app="pll", run="{run}"}}', start, want=3)
    base = {"app": "pll", "run": run, "logger": logger.name}
    assert _entries(streams) == [
        ({**base, "severity": "info"}, "user logged in"),
        ({**base, "severity": "warning", "disk_name": "sda"}, "disk at 91%"),
        ({**base, "severity": "error"}, "payment failed"),
    ]


def test_loki_logger_handler(svc):
    from loki_logger_handler.loki_logger_handler import LokiLoggerHandler

    run = _run_id()
    handler = LokiLoggerHandler(
        url=svc.url + "/loki/api/v1/push",
        labels={"app": "llh", "run": run},
        label_keys={"component"},
        additional_headers={"X-Scope-OrgID": TENANT},
        timeout=0.2,
        compressed=True,
        enable_structured_loki_metadata=True,
        loki_metadata={"source": "e2e"},
        loki_metadata_keys=["trace_id"],
    )
    logger = _logger(f"llh.{run}", handler)
    start = time.time_ns() - NS
    logger.info("order placed", extra={"component": "checkout", "trace_id": "t-1"})
    logger.warning("stock low", extra={"component": "checkout", "trace_id": "t-2"})
    handler.flush_event.set()  # send now rather than at the next flush interval

    streams = _read_back(Client(svc.url, tenant=TENANT, timeout=120), f'{{app="llh", run="{run}"}}', start, want=2)
    assert not handler.error
    entries = _entries(streams)
    labels = {"app": "llh", "run": run, "component": "checkout", "source": "e2e"}
    assert [labels_ for labels_, _ in entries] == [{**labels, "trace_id": "t-1"}, {**labels, "trace_id": "t-2"}]
    lines = [json.loads(line) for _, line in entries]  # the handler sends each record as a JSON line
    assert [(line["message"], line["level"], line["name"], line["component"]) for line in lines] == [
        ("order placed", "INFO", logger.name, "checkout"),
        ("stock low", "WARNING", logger.name, "checkout"),
    ]
    assert all("trace_id" not in line for line in lines)  # moved to structured metadata


def test_opentelemetry_sdk_over_otlp_http(svc, monkeypatch):
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
    from opentelemetry.sdk.resources import Resource

    run = _run_id()
    # Configured as a collector would be: the base address `<addr>/otlp`; the SDK appends /v1/logs.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", svc.url + "/otlp")
    exporter = OTLPLogExporter(headers={"X-Scope-OrgID": TENANT}, timeout=10)
    resource = Resource.create({"service.name": f"otel-{run}", "deployment.environment": "e2e", "host.name": "h1"})
    provider = LoggerProvider(resource=resource)
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))  # one export per record, in order
    logger = _logger(f"otel.{run}", LoggingHandler(level=logging.INFO, logger_provider=provider))
    start = time.time_ns() - NS
    try:
        logger.info("cart created", extra={"cart_id": "c-7"})
        logger.error("checkout failed")
    finally:
        provider.shutdown()

    client = Client(svc.url, tenant=TENANT, timeout=120)
    streams = _read_back(client, f'{{service_name="otel-{run}"}}', start, want=2)
    entries = _entries(streams)
    assert [line for _, line in entries] == ["cart created", "checkout failed"]
    first, second = (labels for labels, _ in entries)
    assert first["cart_id"] == "c-7" and "cart_id" not in second
    assert (first["severity_text"], second["severity_text"]) == ("INFO", "ERROR")
    assert first["host_name"] == "h1"  # a resource attribute outside the index list: structured metadata
    series = client.series(f'{{service_name="otel-{run}"}}', start=start, end=time.time_ns() + NS)
    index = {"service_name": f"otel-{run}", "deployment_environment": "e2e"}
    if "service.instance.id" in resource.attributes:  # newer SDKs add one; it is on the index list too
        index["service_instance_id"] = resource.attributes["service.instance.id"]
    assert series == [index]


def test_grafana_style_health_check(svc):
    # What Grafana's data source "Save & test" sends: an instant metric query that must return 2.
    resp = httpx.get(
        svc.url + "/loki/api/v1/query",
        headers={"X-Scope-OrgID": TENANT, "User-Agent": "Grafana"},
        params={"query": "vector(1)+vector(1)", "time": str(time.time_ns())},
        timeout=30,
    )
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["status"] == "success" and body["data"]["resultType"] == "vector"
    assert [sample["value"][1] for sample in body["data"]["result"]] == ["2"]
    assert (
        Client(svc.url, tenant=TENANT, prefix="/loki/api/v1", timeout=120).query("vector(1)+vector(1)")["result"][0][
            "value"
        ][1]
        == "2"
    )


def test_svclog_client_round_trip(svc):
    run = _run_id()
    client = Client(svc.url, tenant="client-a")
    now = time.time_ns()
    client.push(
        {
            f'{{app="cli-rt", run="{run}"}}': [
                (now - 3 * NS, "proto one"),
                (now - 2 * NS, "proto two", {"trace_id": "x1"}),
            ]
        }
    )
    client.push({f'{{app="cli-rt", run="{run}", fmt="json"}}': [(now - NS, "json three")]}, format="json")
    Client(svc.url, tenant="client-b").push({f'{{app="cli-rt", run="{run}"}}': [(now - NS, "other tenant")]})

    selector = f'{{app="cli-rt", run="{run}"}}'
    streams = _read_back(client, selector, now - 10 * NS, want=3)
    assert _entries(streams) == [
        ({"app": "cli-rt", "run": run}, "proto one"),
        ({"app": "cli-rt", "run": run, "trace_id": "x1"}, "proto two"),
        ({"app": "cli-rt", "run": run, "fmt": "json"}, "json three"),
    ]
    window = {"start": now - 10 * NS, "end": now + NS}
    assert client.labels(**window, query=selector) == ["app", "fmt", "run"]
    assert client.label_values("fmt", **window, query=selector) == ["json"]
    assert sorted(map(str, client.series(selector, **window))) == sorted(
        map(str, [{"app": "cli-rt", "run": run}, {"app": "cli-rt", "fmt": "json", "run": run}])
    )
    both = Client(svc.url, tenant=["client-a", "client-b"]).query(
        f"sum by (__tenant_id__) (count_over_time({selector}[1m]))", time=now + NS
    )
    assert {item["metric"]["__tenant_id__"]: item["value"][1] for item in both["result"]} == {
        "client-a": "3",
        "client-b": "1",
    }
    with pytest.raises(ClientError) as err:
        client.query(selector)  # a log query is not an instant query
    assert err.value.status == 400
    with pytest.raises(ClientError) as err:
        Client(svc.url).labels()  # no tenant
    assert err.value.status == 401


def test_client_tail_receives_entries_pushed_after_connect(svc):
    run = _run_id()
    client = Client(svc.url, tenant=TENANT, timeout=120)
    messages = client.tail(f'{{app="tail-client", run="{run}"}}', start=time.time_ns())
    received: list[dict] = []
    reader = threading.Thread(target=lambda: received.append(next(messages)), daemon=True)
    reader.start()  # connects; nothing to replay, so the first message is the live entry
    time.sleep(0.5)
    client.push({f'{{app="tail-client", run="{run}"}}': [(time.time_ns(), "live line")]})
    reader.join(15)
    assert received, "no tail message within 15 s of the push"
    messages.close()
    assert [(s["stream"], [v[1] for v in s["values"]]) for s in received[0]["streams"]] == [
        ({"app": "tail-client", "run": run}, ["live line"])
    ]


def test_cli_against_the_service(svc, capsys, monkeypatch):
    import io
    import sys

    run = _run_id()
    common = ["--addr", svc.url, "--org-id", TENANT]
    monkeypatch.setattr(sys, "stdin", io.StringIO("first line\nsecond line\n"))
    assert cli_main(["push", "--labels", f'{{app="cli-e2e", run="{run}"}}', *common]) == 0
    capsys.readouterr()
    selector = f'{{app="cli-e2e", run="{run}"}}'
    assert cli_main(["query", selector, "--since", "5m", "--forward", "-o", "raw", *common]) == 0
    assert capsys.readouterr().out == "first line\nsecond line\n"
    assert cli_main(["series", selector, "--since", "5m", *common]) == 0
    assert capsys.readouterr().out == f'{{app="cli-e2e", run="{run}"}}\n'
    assert cli_main(["query", "sum(rate({app=", *common]) == 1
    assert "svclog query: error: 400" in capsys.readouterr().err


def test_ray_driver_example(svc):
    example = runpy.run_path(str(EXAMPLES / "ray_driver.py"), run_name="svclog_example_ray_driver")
    tenants = [f"driver-{_run_id()}", f"driver-{_run_id()}"]
    example["seed"](svc.url, tenants)
    rows = example["run"](svc.url, tenants, ['{app="shop"} |= "level=error"'], 300)
    assert [row["tenant"] for row in rows] == tenants
    for row, tenant in zip(rows, tenants):
        assert "error" not in row, row
        assert sorted(row["lines"]) == [f"level=error tenant={tenant} order={i}" for i in (0, 3)]


def test_driver_query_example(svc):
    example = runpy.run_path(str(EXAMPLES / "driver_query.py"), run_name="svclog_example_driver_query")
    report = example["demo"](Client(svc.url, tenant=f"demo-{_run_id()}"))
    assert report == {
        "error_lines": ["level=error msg=failed"],
        "levels": ["error", "info"],
        "labels": ["app", "env"],
        "values": ["driver-demo"],
        "health": "2",
    }
