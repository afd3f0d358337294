"""A tail whose replay hits a lost Ray object answers a retryable 503 with no Ray text."""

from types import SimpleNamespace

import pytest
import ray.exceptions as rex
from fastapi import FastAPI
from starlette.testclient import TestClient, WebSocketDenialResponse

from svclog.config import default_config
from svclog.serve.tail_routes import add_tail_routes

Q = '{app="a"}'


def _client(query) -> TestClient:
    ring = SimpleNamespace(healthy_members=list, members={})
    pool = SimpleNamespace(ring=SimpleNamespace(get=lambda: ring))
    cfg = default_config()
    return TestClient(add_tail_routes(FastAPI(), lambda: pool, query, lambda: False, lambda: cfg))


@pytest.mark.parametrize(
    "err",
    [
        rex.ObjectLostError("ab" * 14, "owner", "site"),
        rex.WorkerCrashedError(),
        rex.ActorUnavailableError("restarting", None),
    ],
)
def test_a_lost_backend_is_a_503_denial(err):
    async def query(tenants, request):
        raise err

    with pytest.raises(WebSocketDenialResponse) as denied:
        with _client(query).websocket_connect("/loki/api/v1/tail?query=" + Q):
            pass
    assert denied.value.status_code == 503
    assert denied.value.headers["retry-after"] == "1"
    assert "Failed to retrieve" not in denied.value.text and "Ray" not in denied.value.text
