"""The one place a request's tenant is read: `X-Scope-OrgID`, with `auth_enabled` fixed when the
gateway is built (off: every request belongs to the single default tenant)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from svclog.model import ValidationError, parse_tenants, single_tenant

ORG_ID = "x-scope-orgid"


@dataclass(frozen=True)
class Tenants:
    auth_enabled: bool
    multi_tenant_queries: bool = False

    def one(self, headers: Mapping[str, str]) -> str:
        """The request's single tenant (writes, rules, deletes, tails): several -> 400."""
        return single_tenant(headers.get(ORG_ID), auth_enabled=self.auth_enabled)

    def for_query(self, headers: Mapping[str, str]) -> list[str]:
        """The tenants a read spans; several only when multi-tenant queries are enabled."""
        tenants = parse_tenants(headers.get(ORG_ID), auth_enabled=self.auth_enabled)
        if len(tenants) > 1 and not self.multi_tenant_queries:
            raise ValidationError("multiple org IDs present: multi-tenant queries are disabled")
        return tenants
