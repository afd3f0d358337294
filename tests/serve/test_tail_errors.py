"""A tail whose replay hits a lost Ray object answers a retryable 503 with no Ray text."""

from types import SimpleNamespace

import pytest
import ray.exceptions as rex
from starlette.testclient import TestClient, WebSocketDenialResponse

from svclog.serve.app import Services
from tests.fuzz.harness import app_with

Q = '{app="a"}'


def _client(query) -> TestClient:
    ring = SimpleNamespace(healthy_members=list, members={})
    pool = SimpleNamespace(ring=SimpleNamespace(get=lambda: ring))
    return TestClient(app_with(Services(backend=QueryOnly(query), ingesters=pool), auth_enabled=False))


class QueryOnly:
    def __init__(self, query):
        self.query = query


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
