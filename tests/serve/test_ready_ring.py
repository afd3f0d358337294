"""/ready waits for an ingester in the ring: before one joins, a push would meet an empty ring (503)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from svclog.config import load_config
from svclog.serve.admin_backend import RayAdmin
from svclog.services import readiness


class Actors(RayAdmin):
    """Every actor answers at once; the ring lists `members`."""

    def __init__(self):
        super().__init__(load_config("examples/conformance.yaml"), deployments=lambda: {"gateway": ("HEALTHY", "")})
        self.members: list[str] = []

    async def _call(self, name, method, *args, timeout=0.0):
        if method == "snapshot":
            return {"members": [SimpleNamespace(address=address) for address in self.members]}
        return "Running" if method == "service_state" else True


def test_ready_only_once_an_ingester_is_in_the_ring():
    actors = Actors()
    ready, body = readiness(asyncio.run(actors.services()))
    assert not ready and "ingester (Starting)" in body, body
    actors.members = ["ingester-0"]
    ready, body = readiness(asyncio.run(actors.services()))
    assert ready, body
