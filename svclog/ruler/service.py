"""The ruler's remote surface: the operations the HTTP layer calls (hosted by the ruler actor)."""
from __future__ import annotations

from svclog.ruler.api import RulesAPI
from svclog.ruler.compat import parse_filters
from svclog.ruler.ruler import Ruler


class RulerService:
    def __init__(self, api: RulesAPI, ruler: Ruler):
        self.api = api
        self.ruler = ruler

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

    def compat_rules(self, tenant: str, type_: str | None = None, files: list[str] | None = None,
                     groups: list[str] | None = None, names: list[str] | None = None) -> dict:
        return self.ruler.compat_rules(tenant, parse_filters(type_, files or (), groups or (), names or ()))

    def compat_alerts(self, tenant: str) -> dict:
        return self.ruler.compat_alerts(tenant)

    def stats(self) -> dict:
        return vars(self.ruler.stats).copy()
