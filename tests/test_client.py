"""svclog.client and the client subcommands against a tiny local fake service (no Ray)."""

from __future__ import annotations

import io
import json
import threading
import urllib.parse
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from websockets.sync.server import serve as ws_serve

from svclog.cli import main
from svclog.cli_commands import format_result, run
from svclog.client import Client, ClientError
from svclog.model import NS, Entry, Labels, PushStream
from svclog.serve.codecs.push import decode_push

T0 = 1_793_491_200 * NS  # 2026-11-01T00:00:00Z
STREAMS = {
    "resultType": "streams",
    "stats": {},
    "result": [
        {"stream": {"app": "api"}, "values": [[str(T0 + 2), "second"], [str(T0), "first"]]},
        {"stream": {"app": "db", "env": "prod"}, "values": [[str(T0 + 1), "middle"]]},
    ],
}
VECTOR = {"resultType": "vector", "stats": {}, "result": [{"metric": {}, "value": [1793491200.5, "2"]}]}
MATRIX = {
    "resultType": "matrix",
    "stats": {},
    "result": [{"metric": {"app": "api"}, "values": [[1793491200, "1"], [1793491260, "3"]]}],
}


@dataclass
class Seen:
    method: str
    path: str
    params: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes


class FakeService:
    """Answers `routes[path] = (status, body)` and records every request it receives."""

    def __init__(self):
        self.routes: dict[str, tuple[int, bytes | dict]] = {}
        self.seen: list[Seen] = []
        service = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def _answer(self):
                url = urllib.parse.urlsplit(self.path)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                service.seen.append(
                    Seen(
                        self.command,
                        url.path,
                        urllib.parse.parse_qs(url.query),
                        {k.lower(): v for k, v in self.headers.items()},
                        body,
                    )
                )
                status, payload = service.routes.get(url.path, (404, b"404 page not found\n"))
                if isinstance(payload, dict):
                    payload = json.dumps({"status": "success", "data": payload["data"]}).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def ok(self, path: str, data) -> None:
        self.routes["/svc/api/v1/" + path] = (200, {"data": data})

    @property
    def last(self) -> Seen:
        return self.seen[-1]


@pytest.fixture
def fake():
    service = FakeService()
    yield service
    service.server.shutdown()
    service.server.server_close()


# ---------------------------------------------------------------- client


def test_query_and_query_range_send_the_api_parameters(fake):
    fake.ok("query", VECTOR)
    fake.ok("query_range", STREAMS)
    client = Client(fake.url + "/", tenant="acme")
    assert client.query("vector(1)+vector(1)", time=T0, limit=5) == VECTOR
    assert fake.last.path == "/svc/api/v1/query" and fake.last.headers["x-scope-orgid"] == "acme"
    assert fake.last.params == {"query": ["vector(1)+vector(1)"], "time": [str(T0)], "limit": ["5"]}

    start = datetime(2026, 11, 1, tzinfo=UTC)
    data = client.query_range(
        '{app="api"}', start=start, end=1793491260.25, step=timedelta(seconds=30), direction="forward"
    )
    assert data == STREAMS
    assert fake.last.params == {
        "query": ['{app="api"}'],
        "start": [str(T0)],
        "end": [str(T0 + 60 * NS + NS // 4)],
        "step": ["30"],
        "direction": ["forward"],
    }
    client.query_range("x", start="2026-11-01T00:00:00Z", end="now-ish", step="1m")
    assert fake.last.params["start"] == ["2026-11-01T00:00:00Z"] and fake.last.params["step"] == ["1m"]


def test_labels_values_and_series(fake):
    fake.ok("labels", ["app", "env"])
    fake.ok("label/a%20b/values", ["x"])
    fake.ok("series", [{"app": "api"}])
    client = Client(fake.url, tenant=["a", "b"])  # several tenants for multi-tenant queries
    assert client.labels(start=T0, query='{app="api"}') == ["app", "env"]
    assert fake.last.params == {"start": [str(T0)], "query": ['{app="api"}']}
    assert fake.last.headers["x-scope-orgid"] == "a|b"
    assert client.label_values("a b") == ["x"] and fake.last.path == "/svc/api/v1/label/a%20b/values"
    assert client.series('{app="api"}', '{env="prod"}', end=T0) == [{"app": "api"}]
    assert fake.last.method == "POST"
    assert urllib.parse.parse_qs(fake.last.body.decode()) == {
        "match[]": ['{app="api"}', '{env="prod"}'],
        "end": [str(T0)],
    }
    with pytest.raises(ValueError):
        client.series()


@pytest.mark.parametrize("fmt", ["protobuf", "json"])
def test_push_accepts_mapping_and_stream_shapes(fake, fmt):
    fake.routes["/svc/api/v1/push"] = (204, b"")
    client = Client(fake.url, tenant="t1")
    client.push(
        {
            '{app="api", env="prod"}': [(T0, "one"), (T0 + 1, "two", {"trace_id": "abc"})],
            (("app", "db"),): [(T0 / NS + 2.0, "float seconds")],
        },
        format=fmt,
    )
    decoded = decode_push(fake.last.body, fake.last.headers["content-type"], None, max_decompressed_bytes=1 << 20)
    assert fake.last.headers["x-scope-orgid"] == "t1"
    assert decoded == [
        PushStream(
            Labels({"app": "api", "env": "prod"}.items()),
            [Entry(T0, "one"), Entry(T0 + 1, "two", (("trace_id", "abc"),))],
        ),
        PushStream(Labels([("app", "db")]), [Entry(T0 + 2 * NS, "float seconds")]),
    ]
    client.push(
        [
            {"stream": {"app": "x"}, "values": [[str(T0), "api shaped"]]},
            PushStream(Labels([("app", "y")]), [Entry(T0, "object")]),
        ],
        format=fmt,
    )
    decoded = decode_push(fake.last.body, fake.last.headers["content-type"], None, max_decompressed_bytes=1 << 20)
    assert [(str(s.labels), s.entries[0].line) for s in decoded] == [
        ('{app="x"}', "api shaped"),
        ('{app="y"}', "object"),
    ]


def test_push_rejects_bad_input_before_sending(fake):
    client = Client(fake.url, tenant="t1")
    with pytest.raises(ValueError):
        client.push({"{app=": [(T0, "x")]})
    with pytest.raises(ValueError):
        client.push({'{app="x"}': [(T0,)]})
    with pytest.raises(ValueError):
        client.push({'{app="x"}': [(T0, "x")]}, format="yaml")
    assert fake.seen == []


def test_errors_are_typed(fake):
    client = Client(fake.url, tenant="t1", timeout=5)
    fake.routes["/svc/api/v1/query"] = (400, b"parse error at line 1, col 2: syntax error\n")
    with pytest.raises(ClientError) as err:
        client.query("{")
    assert err.value.status == 400 and err.value.message == "parse error at line 1, col 2: syntax error"
    fake.routes["/svc/api/v1/push"] = (260, b"ingestion blocked until tomorrow")
    with pytest.raises(ClientError) as err:
        client.push({'{app="x"}': [(T0, "x")]})
    assert err.value.status == 260 and "blocked" in err.value.message
    fake.routes["/svc/api/v1/labels"] = (200, b"<html>a proxy page</html>")
    with pytest.raises(ClientError, match="expected a JSON answer"):
        client.labels()
    fake.routes["/svc/api/v1/labels"] = (500, json.dumps({"status": "error", "error": "boom"}).encode())
    with pytest.raises(ClientError) as err:
        client.labels()
    assert (err.value.status, err.value.message) == (500, "boom")
    dead = Client("http://127.0.0.1:1", timeout=2)
    with pytest.raises(ClientError) as err:
        dead.labels()
    assert err.value.status == 0 and "cannot reach" in err.value.message


# ---------------------------------------------------------------- tail


@pytest.fixture
def fake_tail():
    """A WebSocket server: refuses several tenants with 400, else sends two messages and closes."""
    seen = []

    def check(connection, request):
        seen.append(request)
        if "|" in request.headers.get("X-Scope-OrgID", ""):
            return connection.respond(400, "multiple org IDs present\n")
        return None

    def session(websocket):
        websocket.send(json.dumps({"streams": [{"stream": {"app": "api"}, "values": [[str(T0), "replayed"]]}]}))
        websocket.send(
            json.dumps({"streams": [], "dropped_entries": [{"labels": {"app": "api"}, "timestamp": str(T0 + 1)}]})
        )

    server = ws_serve(session, "127.0.0.1", 0, process_request=check)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.socket.getsockname()[1]}", seen
    server.shutdown()


def test_tail_yields_messages_until_the_server_closes(fake_tail):
    url, seen = fake_tail
    messages = list(Client(url, tenant="t1").tail('{app="api"}', delay_for=1, limit=10, start=T0))
    assert messages[0]["streams"][0]["values"] == [[str(T0), "replayed"]]
    assert messages[1]["dropped_entries"] == [{"labels": {"app": "api"}, "timestamp": str(T0 + 1)}]
    path, _, query = seen[0].path.partition("?")
    assert path == "/svc/api/v1/tail"
    assert urllib.parse.parse_qs(query) == {
        "query": ['{app="api"}'],
        "delay_for": ["1"],
        "limit": ["10"],
        "start": [str(T0)],
    }
    with pytest.raises(ClientError) as err:
        next(Client(url, tenant="a|b").tail('{app="api"}'))
    assert err.value.status == 400 and err.value.message == "multiple org IDs present"


def test_cli_tail_prints_entries_and_reports_drops(fake_tail, capsys):
    url, _ = fake_tail
    assert main(["tail", '{app="api"}', "--addr", url, "--org-id", "t1"]) == 0
    captured = capsys.readouterr()
    assert captured.out == '2026-11-01T00:00:00Z {app="api"} replayed\n'
    assert "dropped 1 entries" in captured.err


# ---------------------------------------------------------------- CLI


def _cli(fake, *args: str, stdin: str = "") -> tuple[int, str]:
    out = io.StringIO()
    code = run(args[0], [*args[1:], "--addr", fake.url, "--org-id", "t1"], stdin=io.StringIO(stdin), stdout=out)
    return code, out.getvalue()


def test_cli_query_output_formats(fake):
    fake.ok("query_range", STREAMS)
    code, out = _cli(fake, "query", '{app=~".+"}', "--since", "2h", "--limit", "3")
    assert code == 0
    assert out.splitlines() == [
        '2026-11-01T00:00:00.000000002Z {app="api"} second',
        '2026-11-01T00:00:00.000000001Z {app="db", env="prod"} middle',
        '2026-11-01T00:00:00Z {app="api"} first',
    ]
    params = fake.last.params
    assert int(params["end"][0]) - int(params["start"][0]) == 2 * 3600 * NS and params["limit"] == ["3"]
    assert _cli(fake, "query-range", "x", "--output", "raw", "--forward")[1] == "first\nmiddle\nsecond\n"
    assert fake.last.params["direction"] == ["forward"]
    first = json.loads(
        _cli(fake, "query", "x", "-o", "json", "--from", str(T0), "--to", str(T0 + 5))[1].splitlines()[0]
    )
    assert first == {
        "timestamp": "2026-11-01T00:00:00.000000002Z",
        "ts": str(T0 + 2),
        "labels": {"app": "api"},
        "line": "second",
    }
    assert fake.last.params["start"] == [str(T0)] and fake.last.params["end"] == [str(T0 + 5)]


def test_cli_instant_and_metric_output(fake):
    fake.ok("query", VECTOR)
    assert _cli(fake, "query", "vector(1)+vector(1)", "--instant")[1] == "2026-11-01T00:00:00.5Z {} 2\n"
    assert fake.last.path == "/svc/api/v1/query"
    assert format_result(MATRIX, "default") == [
        '2026-11-01T00:00:00Z {app="api"} 1',
        '2026-11-01T00:01:00Z {app="api"} 3',
    ]
    assert format_result(MATRIX, "raw") == ["1", "3"]
    assert json.loads(format_result(VECTOR, "json")[0]) == {
        "timestamp": "2026-11-01T00:00:00.5Z",
        "labels": {},
        "value": "2",
    }


def test_cli_labels_and_series(fake):
    fake.ok("labels", ["app", "env"])
    fake.ok("label/app/values", ["api", "db"])
    fake.ok("series", [{"env": "prod", "app": "db"}, {"app": "api"}])
    assert _cli(fake, "labels") == (0, "app\nenv\n")
    assert "start" not in fake.last.params  # the service's default range
    assert _cli(fake, "labels", "app", "--since", "1h", "-o", "json") == (0, '["api", "db"]\n')
    assert _cli(fake, "series", '{app=~".+"}') == (0, '{app="api"}\n{app="db", env="prod"}\n')
    code, out = _cli(fake, "series", '{app="api"}', '{env="prod"}', "-o", "json")
    assert code == 0 and json.loads(out) == [{"env": "prod", "app": "db"}, {"app": "api"}]


def test_cli_push_reads_stdin_in_order(fake):
    fake.routes["/svc/api/v1/push"] = (204, b"")
    code, _ = _cli(fake, "push", "--labels", '{app="cli"}', "--batch", "2", stdin="a\n\nb\nc\n")
    assert code == 0 and len(fake.seen) == 2  # batches of 2: [a, b], [c]
    streams = [
        s
        for seen in fake.seen
        for s in decode_push(seen.body, "application/x-protobuf", None, max_decompressed_bytes=1 << 20)
    ]
    entries = [e for s in streams for e in s.entries]
    assert [e.line for e in entries] == ["a", "b", "c"]
    assert [e.ts for e in entries] == sorted({e.ts for e in entries})  # strictly increasing
    assert {str(s.labels) for s in streams} == {'{app="cli"}'}


def test_cli_errors_exit_non_zero_with_a_message(fake, capsys):
    fake.routes["/svc/api/v1/query_range"] = (400, b"parse error: unexpected end of input\n")
    assert _cli(fake, "query", "{")[0] == 1
    assert "svclog query: error: 400 parse error: unexpected end of input" in capsys.readouterr().err
    assert _cli(fake, "push", "--labels", "{app=", stdin="x\n")[0] == 2
    assert "invalid argument" in capsys.readouterr().err
    assert _cli(fake, "query", "x", "--since", "yesterday")[0] == 2
    assert _cli(fake, "query")[0] == 2  # argparse: missing LogQL
    assert main(["labels", "--addr", "http://127.0.0.1:1", "--timeout", "2"]) == 1
    assert "cannot reach http://127.0.0.1:1" in capsys.readouterr().err
