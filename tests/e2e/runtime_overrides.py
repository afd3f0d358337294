"""Helpers the e2e tests share: per-tenant runtime overrides and a JSON push that must succeed."""

from __future__ import annotations

import json
import time

import httpx
import yaml

RELOAD_WAIT_S = 2.5  # the test service reloads its runtime config every 1 s


def add_overrides(svc, overrides: dict[str, dict]) -> None:
    """Merge per-tenant limits into the service's runtime config file, then wait for a reload."""
    path = svc.cfg.runtime_config.file
    with open(path) as f:
        current = yaml.safe_load(f) or {}
    merged = {**(current.get("overrides") or {}), **overrides}
    with open(path, "w") as f:
        yaml.safe_dump({"overrides": merged}, f)
    time.sleep(RELOAD_WAIT_S)


def push_streams(svc, tenant: str, streams: list[dict]) -> None:
    """One JSON push of `streams` for `tenant`; anything but 204 fails the test."""
    resp = httpx.post(
        svc.url + "/loki/api/v1/push",
        content=json.dumps({"streams": streams}),
        timeout=120,
        headers={"X-Scope-OrgID": tenant, "Content-Type": "application/json"},
    )
    assert resp.status_code == 204, resp.text
