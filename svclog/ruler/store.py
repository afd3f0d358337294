"""Rule-group storage in the object store: one YAML object per group.

Key layout: `rules/<tenant>/<b64url(namespace)>/<b64url(group)>`. Namespaces and group
names may hold any character (`/`, spaces, `..`, unicode); URL-safe base64 turns them
into key segments every backend accepts, and the mapping stays reversible for listing.
"""
from __future__ import annotations

import base64
import binascii

from svclog.model import NotFoundError, ValidationError
from svclog.ruler.rulefmt import RuleGroup, decode_group, dump_yaml, group_to_dict, load_yaml
from svclog.storage.objstore import ObjectStore

PREFIX = "rules"


def encode_segment(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode()


def decode_segment(segment: str) -> str | None:
    try:
        return base64.urlsafe_b64decode(segment.encode()).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


# Messages are default arguments so the errors pickle (they cross the Ray boundary).
class GroupNotFound(NotFoundError):
    def __init__(self, message: str = "group does not exist") -> None:
        super().__init__(message)


class NamespaceNotFound(NotFoundError):
    def __init__(self, message: str = "group namespace does not exist") -> None:
        super().__init__(message)


class RuleStore:
    def __init__(self, store: ObjectStore):
        self.store = store

    # ------------------------------------------------------------ keys

    @staticmethod
    def _tenant_prefix(tenant: str) -> str:
        return f"{PREFIX}/{tenant}"

    @classmethod
    def _namespace_prefix(cls, tenant: str, namespace: str) -> str:
        if not namespace:
            raise ValidationError("a namespace must be provided in the request")
        return f"{cls._tenant_prefix(tenant)}/{encode_segment(namespace)}"

    @classmethod
    def group_key(cls, tenant: str, namespace: str, group: str) -> str:
        if not group:
            raise ValidationError("a matching group name must be provided in the request")
        return f"{cls._namespace_prefix(tenant, namespace)}/{encode_segment(group)}"

    # ------------------------------------------------------------ reads

    def get_group(self, tenant: str, namespace: str, name: str) -> RuleGroup:
        try:
            data = self.store.get(self.group_key(tenant, namespace, name))
        except FileNotFoundError:
            raise GroupNotFound() from None
        return decode_group(load_yaml(data))

    def list_groups(self, tenant: str, namespace: str | None = None) -> dict[str, list[RuleGroup]]:
        """namespace -> its groups (sorted by name); only `namespace` when given."""
        prefix = self._namespace_prefix(tenant, namespace) if namespace else self._tenant_prefix(tenant)
        found: dict[str, list[RuleGroup]] = {}
        for key in self.store.list(prefix, recursive=True):
            parts = key.split("/")
            if len(parts) != 4:
                continue
            ns, name = decode_segment(parts[2]), decode_segment(parts[3])
            if ns is None or name is None:
                continue
            try:
                group = decode_group(load_yaml(self.store.get(key)))
            except (FileNotFoundError, ValidationError):
                continue  # deleted meanwhile, or not ours
            found.setdefault(ns, []).append(group)
        return {ns: sorted(groups, key=lambda g: g.name) for ns, groups in sorted(found.items())}

    def list_tenants(self) -> list[str]:
        return self.store.list_dirs(PREFIX)

    # ------------------------------------------------------------ writes

    def set_group(self, tenant: str, namespace: str, group: RuleGroup) -> None:
        self.store.put(self.group_key(tenant, namespace, group.name), dump_yaml(group_to_dict(group)).encode())

    def delete_group(self, tenant: str, namespace: str, name: str) -> None:
        key = self.group_key(tenant, namespace, name)
        if not self.store.exists(key):
            raise GroupNotFound()
        self.store.delete(key)

    def delete_namespace(self, tenant: str, namespace: str) -> None:
        keys = self.store.list(self._namespace_prefix(tenant, namespace), recursive=True)
        if not keys:
            raise NamespaceNotFound()
        for key in keys:
            self.store.delete(key)
