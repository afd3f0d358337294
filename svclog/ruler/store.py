"""Rule-group storage in the object store: one YAML object per group.

Key layout: `rules/<tenant>/<namespace segments>/<group segments>`. Namespaces and group
names may hold any character (`/`, spaces, `..`, unicode); URL-safe base64 turns them
into key segments every backend accepts, and the mapping stays reversible for listing.
A long name's base64 is split into several segments of at most `SEGMENT_CHARS`, each but
the last ending in `~` (not a base64 character), so no path component exceeds a file
system's 255-byte name limit; short names keep their single-segment keys.
"""

from __future__ import annotations

import base64
import binascii

from svclog.model import NotFoundError, ValidationError
from svclog.ruler.rulefmt import RuleGroup, decode_group, dump_yaml, group_to_dict, load_yaml
from svclog.storage.objstore import ObjectStore

PREFIX = "rules"
# 216 base64 characters plus the object store's `.tmp-<32 hex>` write suffix stay within
# 255 bytes; every name whose key fitted in one segment before keeps that key.
SEGMENT_CHARS = 216
CONTINUED = "~"
MAX_NAME_BYTES = 1024  # keeps a whole key within S3's 1024-byte and a local path's 4096-byte limits


def encode_segment(text: str) -> str:
    """The key part of a name: one segment, or several joined by `/` for a long name."""
    encoded = base64.urlsafe_b64encode(text.encode()).decode()
    pieces = [encoded[i : i + SEGMENT_CHARS] for i in range(0, len(encoded), SEGMENT_CHARS)] or [""]
    return "/".join([p + CONTINUED for p in pieces[:-1]] + pieces[-1:])


def decode_segment(segment: str) -> str | None:
    try:
        return base64.urlsafe_b64decode(segment.replace(CONTINUED + "/", "").encode()).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


def split_names(parts: list[str]) -> tuple[str, str] | None:
    """(namespace, group) key parts from the key segments after the tenant; None when malformed."""
    names, current = [], []
    for part in parts:
        current.append(part)
        if not part.endswith(CONTINUED):
            names.append("/".join(current))
            current = []
    return (names[0], names[1]) if len(names) == 2 and not current else None


def _check_length(kind: str, name: str) -> None:
    size = len(name.encode())
    if size > MAX_NAME_BYTES:
        raise ValidationError(f"rule {kind} name too long: {size} bytes (limit: {MAX_NAME_BYTES} bytes)")


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
        _check_length("namespace", namespace)
        return f"{cls._tenant_prefix(tenant)}/{encode_segment(namespace)}"

    @classmethod
    def group_key(cls, tenant: str, namespace: str, group: str) -> str:
        if not group:
            raise ValidationError("a matching group name must be provided in the request")
        _check_length("group", group)
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
            parts = split_names(key.split("/")[2:])
            if parts is None:
                continue
            ns, name = decode_segment(parts[0]), decode_segment(parts[1])
            if ns is None or name is None or (namespace and ns != namespace):
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
        """Deleting a group that is not there succeeds, as on the reference's object stores
        (S3 and the file system delete idempotently); a missing namespace is an error only
        when the whole namespace is deleted."""
        key = self.group_key(tenant, namespace, name)
        if self.store.exists(key):
            self.store.delete(key)

    def delete_namespace(self, tenant: str, namespace: str) -> None:
        keys = self.store.list(self._namespace_prefix(tenant, namespace), recursive=True)
        if not keys:
            raise NamespaceNotFound()
        for key in keys:
            self.store.delete(key)
