"""Delayed chunk removal: chunks dropped from the index are deleted after `retention_delete_delay`.

The delay lets queries that read the old index finish fetching. A marker object lists the
keys and the days whose index referenced them; when it is due, a key is deleted only if
no current segment of those days references it again (a replica may re-flush an
identical chunk, which has the same content-derived key).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

from svclog.compactor.tenant_index import TenantIndex
from svclog.storage.objstore import ObjectStore

PENDING_PREFIX = "compactor/pending"


def schedule_chunk_deletion(store: ObjectStore, tenant: str, keys: list[str], days: list[int], now_ns: int) -> str:
    marker = f"{PENDING_PREFIX}/{tenant}/{now_ns:020d}-{uuid.uuid4().hex[:8]}.json"
    store.put(marker, json.dumps({"keys": sorted(keys), "days": sorted(set(days))}).encode())
    return marker


@dataclass
class SweepResult:
    chunks_deleted: int = 0
    chunks_kept: int = 0  # referenced again by the index, so not deleted
    markers_done: int = 0


def _marker_time(key: str) -> int:
    name = key.rsplit("/", 1)[-1]
    try:
        return int(name.split("-", 1)[0])
    except ValueError:
        return 0


def sweep(store: ObjectStore, now_ns: int, delay_ns: int) -> SweepResult:
    """Delete the chunks of every marker older than the delay."""
    result = SweepResult()
    for tenant in store.list_dirs(PENDING_PREFIX):
        for marker in store.list(f"{PENDING_PREFIX}/{tenant}"):
            if _marker_time(marker) + delay_ns > now_ns:
                continue
            try:
                body = json.loads(store.get(marker))
            except FileNotFoundError:
                continue
            index = TenantIndex(store, tenant)
            referenced: set[str] = set()
            for day in body.get("days", []):
                referenced |= set(index.day(day).refs)
            for key in body.get("keys", []):
                if key in referenced or not key.startswith(f"chunks/{tenant}/"):
                    result.chunks_kept += 1
                    continue
                store.delete(key)
                result.chunks_deleted += 1
            store.delete(marker)
            result.markers_done += 1
    return result
