"""The `stats` object of query responses, filled from the source's real counters."""
from __future__ import annotations

from svclog.logql.source import SourceStats


def build_stats(s: SourceStats, exec_seconds: float, queue_seconds: float = 0.0) -> dict:
    total_bytes = s.ingester_bytes + s.store_bytes
    total_lines = s.ingester_lines + s.store_lines
    per_second = (lambda v: int(v / exec_seconds)) if exec_seconds > 0 else (lambda v: 0)
    return {
        "ingester": {
            "compressedBytes": 0, "decompressedBytes": 0, "decompressedLines": 0,
            "headChunkBytes": s.ingester_bytes, "headChunkLines": s.ingester_lines,
            "totalBatches": s.ingester_reached, "totalChunksMatched": s.ingester_chunks,
            "totalDuplicates": 0, "totalLinesSent": s.ingester_lines, "totalReached": s.ingester_reached,
        },
        "store": {
            "compressedBytes": s.store_compressed_bytes, "decompressedBytes": s.store_bytes,
            "decompressedLines": s.store_lines, "chunksDownloadTime": s.store_download_seconds,
            "totalChunksRef": s.store_chunks_ref, "totalChunksDownloaded": s.store_chunks_downloaded,
            "totalDuplicates": s.duplicates,
        },
        "summary": {
            "bytesProcessedPerSecond": per_second(total_bytes), "execTime": exec_seconds,
            "linesProcessedPerSecond": per_second(total_lines), "queueTime": queue_seconds,
            "totalBytesProcessed": total_bytes, "totalLinesProcessed": total_lines,
        },
    }


def merge_source_stats(parts: list[SourceStats]) -> SourceStats:
    total = SourceStats()
    for part in parts:
        for name in total.__dataclass_fields__:
            if name != "extra":
                setattr(total, name, getattr(total, name) + getattr(part, name))
    return total
