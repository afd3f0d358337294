"""Write-ahead log: every accepted push is on local disk before it is acknowledged.

Layout under the WAL directory: numbered segment files `segment-<n>` of records
`[u32 length][u32 crc32][payload]`, and at most one `checkpoint-<n>` holding a
snapshot of all unflushed in-memory data as of the rotation to segment n+1.
Replay = checkpoint + every later segment, stopping at the first torn record.
Writes go to the OS on every record (survives a process kill); fsync runs every
`fsync_interval` seconds (bounds loss on power failure) in a thread of its own, so no push
waits for the disk: run by the push that found it due, under the ingester's lock, an fsync
held every push up for 50-150 ms once a second while segments grew by tens of MB/s.
"""

from __future__ import annotations

import os
import pickle
import struct
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

_HEADER = struct.Struct("<II")


class WAL:
    def __init__(
        self, directory: str | os.PathLike[str], *, fsync_interval: float = 1.0, segment_bytes: int = 64 << 20
    ):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.fsync_interval = fsync_interval
        self.segment_bytes = segment_bytes
        segments = self._numbers("segment-")
        self.segment = (max(segments) + 1) if segments else 0
        self._file = open(self.dir / f"segment-{self.segment}", "ab")
        self._rotated: list[BinaryIO] = []  # closed segments not fsynced yet (see rotate)
        self._sync_lock = threading.Lock()  # an fsync and the closing of a file it may be syncing
        self._unsynced = False  # records written to the OS since the last fsync
        self._closed = threading.Event()
        self._syncer: threading.Thread | None = None

    def _numbers(self, prefix: str) -> list[int]:
        return sorted(
            int(p.name[len(prefix) :]) for p in self.dir.glob(prefix + "*") if p.name[len(prefix) :].isdigit()
        )

    # ------------------------------------------------------------ writing

    def append(self, record: Any) -> None:
        payload = pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL)
        self._file.write(_HEADER.pack(len(payload), zlib.crc32(payload)) + payload)
        self._file.flush()
        self._unsynced = True
        if self._syncer is None:
            self._syncer = threading.Thread(target=self._sync_loop, name="wal-fsync", daemon=True)
            self._syncer.start()

    def _sync_loop(self) -> None:
        while not self._closed.wait(self.fsync_interval):
            if self._unsynced:
                self._unsynced = False  # before the fsync: a record written during it waits for the next
                try:
                    self._sync_current()
                except (OSError, ValueError):  # closed meanwhile; close() syncs itself
                    pass

    def _sync_current(self) -> None:
        with self._sync_lock:
            handle = self._file  # a rotation may replace it meanwhile: the old one stays open until synced
            os.fsync(handle.fileno())

    def sync(self) -> None:
        self._file.flush()
        self._sync_current()

    def rotate(self) -> int:
        """Start the next segment; returns the closed segment's number. The closed one is written
        to the OS here and fsynced by the next `write_checkpoint` (or `close`), so a rotation
        under the ingester's lock does not wait for the disk."""
        self._file.flush()
        self._rotated.append(self._file)
        closed = self.segment
        self.segment += 1
        self._file = open(self.dir / f"segment-{self.segment}", "ab")
        return closed

    def _sync_rotated(self) -> None:
        while self._rotated:
            handle = self._rotated[0]
            os.fsync(handle.fileno())
            with self._sync_lock:  # not while the syncer thread may be fsyncing it
                handle.close()
            self._rotated.pop(0)

    def checkpoint(self, snapshot: Any) -> None:
        """Persist `snapshot` (all unflushed data) and drop the segments it covers."""
        self.write_checkpoint(self.rotate(), snapshot)

    def write_checkpoint(self, covered: int, snapshot: Any) -> None:
        """Persist `snapshot`, the state as of closing segment `covered` (see `rotate`), and drop
        the segments it covers. Touches no open segment, so appends may go on meanwhile."""
        self._sync_rotated()
        tmp = self.dir / f"checkpoint-{covered}.tmp"
        with open(tmp, "wb") as handle:
            # pickled straight into the file, the header written last: pickle.dumps held a copy of
            # every unflushed entry in memory for the write (the whole heads, once more)
            handle.write(_HEADER.pack(0, 1))  # no valid record until the real header replaces it
            sink = _ChecksummedWriter(handle)
            pickle.dump(snapshot, sink, protocol=pickle.HIGHEST_PROTOCOL)
            handle.seek(0)
            handle.write(_HEADER.pack(sink.length, sink.crc))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.dir / f"checkpoint-{covered}")
        for number in self._numbers("segment-"):
            if number <= covered:
                (self.dir / f"segment-{number}").unlink(missing_ok=True)
        for number in self._numbers("checkpoint-"):
            if number < covered:
                (self.dir / f"checkpoint-{number}").unlink(missing_ok=True)

    def close(self) -> None:
        self._closed.set()
        try:
            self._sync_rotated()
            self.sync()
        finally:
            with self._sync_lock:
                self._file.close()

    # ------------------------------------------------------------ replay

    def replay(self) -> tuple[Any | None, Iterator[Any]]:
        """(latest checkpoint snapshot or None, records of the segments after it)."""
        checkpoints = self._numbers("checkpoint-")
        snapshot, covered = None, -1
        if checkpoints:
            covered = checkpoints[-1]
            saved = list(_read_records(self.dir / f"checkpoint-{covered}"))
            snapshot = saved[0] if saved else None
        segments = [n for n in self._numbers("segment-") if n > covered and n != self.segment]
        current = self.segment

        def records() -> Iterator[Any]:
            for number in segments + [current]:
                yield from _read_records(self.dir / f"segment-{number}")

        return snapshot, records()


class _ChecksummedWriter:
    """A file's write that also counts the bytes written and their CRC-32 (a record's header)."""

    def __init__(self, handle: BinaryIO):
        self.handle = handle
        self.length = 0
        self.crc = 0

    def write(self, data: bytes | memoryview) -> int:
        self.crc = zlib.crc32(data, self.crc)
        self.length += len(memoryview(data).cast("B"))
        return self.handle.write(data)


def _read_records(path: Path) -> Iterator[Any]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    pos = 0
    while pos + _HEADER.size <= len(data):
        length, crc = _HEADER.unpack_from(data, pos)
        payload = data[pos + _HEADER.size : pos + _HEADER.size + length]
        if len(payload) < length or zlib.crc32(payload) != crc:
            return  # torn tail of a crashed write: everything before it is intact
        yield pickle.loads(payload)
        pos += _HEADER.size + length
