"""The `stats` object of query responses, filled from the source's real counters."""

from __future__ import annotations

from svclog.logql.source import SourceStats


def build_stats(s: SourceStats, exec_seconds: float, queue_seconds: float = 0.0) -> dict:
    total_bytes = s.ingester_bytes + s.store_bytes
    sealed_lines, sealed_bytes = s.ingester_lines - s.ingester_head_lines, s.ingester_bytes - s.ingester_head_bytes
    total_lines = s.ingester_lines + s.store_lines
    per_second = (lambda v: int(v / exec_seconds)) if exec_seconds > 0 else (lambda v: 0)
    return {
        "ingester": {
            # sealed chunks wait in memory as Arrow tables: read without decompressing
            "compressedBytes": 0,
            "decompressedBytes": sealed_bytes,
            "decompressedLines": sealed_lines,
            "headChunkBytes": s.ingester_head_bytes,
            "headChunkLines": s.ingester_head_lines,
            "totalBatches": s.ingester_batches,
            "totalChunksMatched": s.ingester_chunks,
            "totalDuplicates": 0,
            "totalLinesSent": s.ingester_lines_sent,
            "totalReached": s.ingester_reached,
        },
        "store": {
            "compressedBytes": s.store_compressed_bytes,
            "decompressedBytes": s.store_bytes,
            "decompressedLines": s.store_lines,
            "chunksDownloadTime": s.store_download_seconds,
            "totalChunksRef": s.store_chunks_ref,
            "totalChunksDownloaded": s.store_chunks_downloaded,
            "totalDuplicates": s.duplicates,
            # the token index (chunk/token_index.py): blocks in range, asked, and ruled out undecoded
            "totalBlocks": s.extra.get("index_blocks", 0),
            "blocksCheckedByTokenIndex": s.extra.get("index_blocks_indexed", 0),
            "blocksSkippedByTokenIndex": s.extra.get("index_blocks_skipped", 0),
            "chunksSkippedByTokenIndex": s.extra.get("index_chunks_skipped", 0),
        },
        "summary": {
            "bytesProcessedPerSecond": per_second(total_bytes),
            "execTime": exec_seconds,
            "linesProcessedPerSecond": per_second(total_lines),
            "queueTime": queue_seconds,
            "totalBytesProcessed": total_bytes,
            "totalLinesProcessed": total_lines,
        },
    }


def merge_source_stats(parts: list[SourceStats]) -> SourceStats:
    """The stats of a whole query from its sub-queries' (time pieces and shards)."""
    total = SourceStats()
    for part in parts:
        for name, value in part.extra.items():
            if name.startswith("index_"):  # the token-index counters add up like the rest
                total.extra[name] = total.extra.get(name, 0) + value
        for name in total.__dataclass_fields__:
            if name == "extra":
                continue
            mine, theirs = getattr(total, name), getattr(part, name)
            setattr(total, name, max(mine, theirs) if name in SourceStats.MAX_MERGED else mine + theirs)
    return total
