"""Alertmanager and remote-write delivery over real HTTP (receivers on 127.0.0.1, random ports)."""

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import snappy

from svclog.model import NS, Labels
from svclog.ruler import remote_write_pb2
from svclog.ruler.api import RulesAPI
from svclog.ruler.delivery import DeliveryError, RetryPolicy, post
from svclog.ruler.notifier import AlertmanagerNotifier, alertmanager_endpoints
from svclog.ruler.remote_write import RemoteWriter, decode_write_request, encode_write_request
from svclog.ruler.ruler import Ruler, RulerSettings

from .conftest import ALERT_BODY, RECORD_BODY

REPO = Path(__file__).resolve().parents[2]
FAST = RetryPolicy(attempts=3, timeout_s=5, backoff_s=0.01, max_backoff_s=0.02)


class Receiver:
    """An HTTP server recording every POST; `statuses` are answered in order, then 200."""

    def __init__(self, statuses=()):
        self.requests: list = []
        self.statuses = list(statuses)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.requests.append((self.path, self.headers, body))  # case-insensitive
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    found = Receiver()
    yield found
    found.close()


def test_alertmanager_endpoints():
    assert alertmanager_endpoints("http://a:9093, http://b/prefix/ ,http://c/api/v2/alerts") == [
        "http://a:9093/api/v2/alerts",
        "http://b/prefix/api/v2/alerts",
        "http://c/api/v2/alerts",
    ]


def test_notifier_posts_v2_alerts(receiver):
    notifier = AlertmanagerNotifier(receiver.url, FAST, external_labels=(("cluster", "eu"), ("app", "ignored")))
    alert = {
        "labels": {"alertname": "A", "app": "api"},
        "annotations": {"s": "x"},
        "startsAt": "2027-01-15T08:00:00Z",
        "endsAt": "2027-01-15T08:04:00Z",
    }
    notifier.send("tenant-1", [alert])
    [(path, headers, body)] = receiver.requests
    assert path == "/api/v2/alerts"
    assert headers["Content-Type"] == "application/json" and headers["X-Scope-OrgID"] == "tenant-1"
    assert json.loads(body) == [{**alert, "labels": {"alertname": "A", "app": "api", "cluster": "eu"}}]


def test_post_retries_server_errors_but_not_refusals():
    flaky = Receiver(statuses=[503, 500])
    try:
        assert post(flaky.url + "/x", b"{}", {}, FAST, sleep=lambda s: None) == 200
        assert len(flaky.requests) == 3
    finally:
        flaky.close()
    refusing = Receiver(statuses=[400])
    try:
        with pytest.raises(DeliveryError, match="HTTP 400") as err:
            post(refusing.url + "/x", b"{}", {}, FAST)
        assert not err.value.retryable and len(refusing.requests) == 1
    finally:
        refusing.close()


def test_post_gives_up_on_an_unreachable_receiver():
    closed = Receiver()
    url = closed.url
    closed.close()
    with pytest.raises(DeliveryError, match="after 3 attempts") as err:
        post(url + "/x", b"", {}, FAST, sleep=lambda s: None)
    assert err.value.retryable


def test_remote_write_encoding_round_trips():
    a = Labels({"__name__": "m", "x": "1"}.items())
    b = Labels({"__name__": "m", "x": "2"}.items())
    samples = [(a, 1.5, 2_000 * 1_000_000), (b, 2.0, 1_000 * 1_000_000), (a, 0.5, 1_000 * 1_000_000)]
    body = encode_write_request(samples)
    request = remote_write_pb2.WriteRequest()
    request.ParseFromString(snappy.uncompress(body))
    assert [[(lb.name, lb.value) for lb in ts.labels] for ts in request.timeseries] == [
        [("__name__", "m"), ("x", "1")],
        [("__name__", "m"), ("x", "2")],
    ]
    assert [(s.value, s.timestamp) for s in request.timeseries[0].samples] == [(0.5, 1000), (1.5, 2000)]
    assert sorted(decode_write_request(body)) == sorted(samples)


def test_remote_writer_sends_and_keeps_a_backlog_while_the_receiver_is_down(receiver):
    series = Labels({"__name__": "m"}.items())
    down = Receiver()
    down_url = down.url
    down.close()
    writer = RemoteWriter(down_url + "/api/v1/push", FAST)
    with pytest.raises(DeliveryError):
        writer.write("t", [(series, 1.0, 1_000_000_000)])
    assert writer.backlog("t") == 1
    writer.url = receiver.url + "/api/v1/push"
    writer.write("t", [(series, 2.0, 2_000_000_000)])
    [(path, headers, body)] = receiver.requests
    assert path == "/api/v1/push"
    assert headers["Content-Encoding"] == "snappy" and headers["Content-Type"] == "application/x-protobuf"
    assert headers["X-Prometheus-Remote-Write-Version"] == "0.1.0" and headers["X-Scope-OrgID"] == "t"
    assert [v for _, v, _ in decode_write_request(body)] == [1.0, 2.0]
    assert writer.backlog("t") == 0


class VectorQuerier:
    def __init__(self, vector):
        self.vector = vector

    def instant(self, tenant, query, at_ns):
        return self.vector


def test_ruler_delivers_alerts_and_recorded_samples_over_http(rule_store, receiver):
    remote = Receiver()
    try:
        RulesAPI(rule_store).set_group("t", "alerts", ALERT_BODY.replace("for: 2m", "for: 1m"))
        RulesAPI(rule_store).set_group("t", "records", RECORD_BODY)
        ruler = Ruler(
            rule_store,
            VectorQuerier([({"app": "api", "cluster": "c1"}, 3.0)]),
            RulerSettings(),
            AlertmanagerNotifier(receiver.url, FAST),
            RemoteWriter(remote.url + "/push", FAST),
        )
        start = 1_800_000_000 * NS
        for second in range(0, 6 * 60, 5):
            ruler.tick(start + second * NS)
        assert receiver.requests, "the Alertmanager stand-in got no alert"
        alerts = json.loads(receiver.requests[0][2])
        assert alerts[0]["labels"]["alertname"] == "HighApiErrorRate"
        assert alerts[0]["annotations"]["summary"] == "api error rate is 3"
        assert remote.requests, "the remote-write receiver got nothing"
        decoded = decode_write_request(remote.requests[0][2])
        assert decoded[0][0].get("__name__") == "nginx:requests:rate5m" and decoded[0][1] == 3.0
        assert ruler.stats.alert_send_failures == 0 and ruler.stats.sample_write_failures == 0
    finally:
        remote.close()


def test_generated_remote_write_module_is_current(tmp_path):
    proto = "svclog/ruler/remote_write.proto"
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{REPO}", f"--python_out={tmp_path}", str(REPO / proto)],
        check=True,
        capture_output=True,
    )
    fresh = (tmp_path / "svclog/ruler/remote_write_pb2.py").read_text()
    committed = (REPO / "svclog/ruler/remote_write_pb2.py").read_text().splitlines(keepends=True)
    body = "".join(
        line for index, line in enumerate(committed) if index >= 4 or not line.startswith(("# svclog:", "# ruff: noqa"))
    )
    assert body == fresh, "remote_write_pb2.py is stale: regenerate it (see its header)"
