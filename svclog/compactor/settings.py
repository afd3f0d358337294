"""CompactorSettings: the plain values the compactor needs, taken from `compactor` and `ingester` config."""

from __future__ import annotations

from dataclasses import dataclass

_MINUTE = 60 * 1_000_000_000
_HOUR = 60 * _MINUTE


@dataclass(frozen=True)
class CompactorSettings:
    compaction_interval: int = 10 * _MINUTE  # ns between background runs
    retention_enabled: bool = False
    retention_delete_delay: int = 2 * _HOUR  # ns a removed chunk stays in the store (readers in flight)
    delete_request_cancel_period: int = 24 * _HOUR  # ns a delete request waits before processing
    delete_max_interval: int = 24 * _HOUR  # ns; line-filter requests are sharded by at most this
    chunk_target_size: int = 1572864  # raw line bytes a merged chunk aims for
    chunk_encoding: str = "zstd"
    chunk_block_size: int = 262144
    writer_id: str = "compactor"
