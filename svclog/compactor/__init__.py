"""The compactor: index compaction, chunk merging, retention and log deletion (pure Python, no Ray)."""

from svclog.compactor.compactor import Compactor, RunReport
from svclog.compactor.delete_filter import (
    DeleteFilter,
    QueryTimeDeletes,
    apply_to_block,
    apply_to_table,
    pending_delete_filters,
)
from svclog.compactor.delete_requests import DeleteRequest, DeleteRequestStore, DeletionDisabledError
from svclog.compactor.settings import CompactorSettings

__all__ = [
    "Compactor",
    "CompactorSettings",
    "DeleteFilter",
    "DeleteRequest",
    "DeleteRequestStore",
    "DeletionDisabledError",
    "QueryTimeDeletes",
    "RunReport",
    "apply_to_block",
    "apply_to_table",
    "pending_delete_filters",
]
