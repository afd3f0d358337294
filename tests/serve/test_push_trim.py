"""The gateway asks for its freed push memory to go back to the OS after every push, taken or not."""

from __future__ import annotations

import pytest

from svclog.config import default_config
from svclog.model import SvcError
from svclog.serve import deployments
from svclog.serve.deployments import HostedDistributor

BODY = b'{"streams": [{"stream": {"app": "a"}, "values": [["1700000000000000000", "hello"]]}]}'


class _Trimmer:
    def __init__(self):
        self.requests = 0

    def request(self):
        self.requests += 1


class _Distributor:
    def __init__(self):
        self.pushed = []

    def push(self, tenant, streams):
        self.pushed.append((tenant, [len(s) for s in streams]))
        return "ok"


class _Gateway(HostedDistributor):
    """The hosted distributor's push step over a recording distributor (no Ray)."""

    def __init__(self):
        self.cfg = default_config()
        self.distributor = _Distributor()


@pytest.fixture
def trimmer(monkeypatch):
    fake = _Trimmer()
    monkeypatch.setattr(deployments, "_PUSH_TRIMMER", fake)
    return fake


def test_every_push_asks_for_a_trim_taken_or_refused(trimmer):
    gateway = _Gateway()
    assert gateway._push("t", BODY, "application/json", None) == "ok"
    assert gateway.distributor.pushed == [("t", [1])] and trimmer.requests == 1
    with pytest.raises(SvcError):
        gateway._push("t", b"{not json", "application/json", None)
    assert trimmer.requests == 2 and len(gateway.distributor.pushed) == 1
