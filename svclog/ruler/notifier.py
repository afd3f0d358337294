"""Alert delivery to Alertmanager through its v2 API (`POST <url>/api/v2/alerts`, JSON).

`alertmanager_url` may list several Alertmanagers separated by commas; every one gets
the alerts, and a send succeeds when at least one accepted them (they deduplicate).
External labels are added to each alert unless it already has that label.
"""

from __future__ import annotations

import json

from svclog.ruler.delivery import DEFAULT_POLICY, DeliveryError, RetryPolicy, post

API_PATH = "/api/v2/alerts"


def alertmanager_endpoints(urls: str) -> list[str]:
    out = []
    for url in (u.strip() for u in urls.split(",")):
        if url:
            out.append(url if url.rstrip("/").endswith(API_PATH) else url.rstrip("/") + API_PATH)
    return out


class AlertmanagerNotifier:
    def __init__(
        self,
        urls: str,
        policy: RetryPolicy = DEFAULT_POLICY,
        external_labels: tuple[tuple[str, str], ...] = (),
        send_org_id: bool = True,
    ):
        self.endpoints = alertmanager_endpoints(urls)
        self.policy = policy
        self.external_labels = external_labels
        self.send_org_id = send_org_id

    def payload(self, alerts: list[dict]) -> bytes:
        out = []
        for alert in alerts:
            labels = dict(self.external_labels)
            labels.update(alert["labels"])
            out.append({**alert, "labels": labels})
        return json.dumps(out).encode()

    def send(self, tenant: str, alerts: list[dict]) -> None:
        if not alerts or not self.endpoints:
            return
        body = self.payload(alerts)
        headers = {"Content-Type": "application/json", "User-Agent": "svclog-ruler"}
        if self.send_org_id:
            headers["X-Scope-OrgID"] = tenant
        errors = []
        for endpoint in self.endpoints:
            try:
                post(endpoint, body, headers, self.policy)
            except DeliveryError as err:
                errors.append(str(err))
        if len(errors) == len(self.endpoints):
            raise DeliveryError("; ".join(errors))
