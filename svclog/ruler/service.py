"""The ruler's remote surface: the operations the HTTP layer calls (hosted by the ruler actor).

When several rulers share the groups, `rulers()` names every ruler (as handles the HTTP
layer can call), so the compat views ask each one for the groups it evaluates and merge;
the rules API itself can be answered by any ruler, as they share one store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from svclog.model import now_ns
from svclog.ruler.api import RulesAPI
from svclog.ruler.compat import parse_filters
from svclog.ruler.ruler import Ruler


class RulerService:
    def __init__(self, api: RulesAPI, ruler: Ruler, peers: Callable[[], list[Any]] = list):
        self.api = api
        self.ruler = ruler
        self.peers = peers

    def list_rules(self, tenant: str, labels: str | None = None) -> str:
        return self.api.list_rules(tenant, None, labels)

    def get_namespace(self, tenant: str, namespace: str) -> str:
        return self.api.get_namespace(tenant, namespace)

    def get_group(self, tenant: str, namespace: str, group: str) -> str:
        return self.api.get_group(tenant, namespace, group)

    def set_group(self, tenant: str, namespace: str, body: bytes) -> None:
        self.api.set_group(tenant, namespace, body)

    def delete_group(self, tenant: str, namespace: str, group: str) -> None:
        self.api.delete_group(tenant, namespace, group)

    def delete_namespace(self, tenant: str, namespace: str) -> None:
        self.api.delete_namespace(tenant, namespace)

    def compat_rules(
        self,
        tenant: str,
        type_: str | None = None,
        files: list[str] | None = None,
        groups: list[str] | None = None,
        names: list[str] | None = None,
    ) -> dict:
        return self.ruler.compat_rules(tenant, parse_filters(type_, files or (), groups or (), names or ()))

    def compat_alerts(self, tenant: str) -> dict:
        return self.ruler.compat_alerts(tenant)

    def rulers(self) -> list[Any]:
        """Every ruler sharing the groups (this one included); empty when this one runs alone."""
        return self.peers()

    def sync_tenant(self, tenant: str) -> None:
        """Reload a tenant's groups now (another ruler changed them through the API)."""
        self.ruler.sync(now_ns(), tenant)

    def stats(self) -> dict:
        return vars(self.ruler.stats).copy()
