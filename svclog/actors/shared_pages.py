"""Letting go of the object store's pages a process touched (madvise on Ray's plasma mapping).

Ray maps its whole object store (one file in /dev/shm) into every process that writes or reads
objects. A page the process touched stays in its page table, counted in its RSS, long after the
objects on it are gone (ray-project/ray#53261): 30 s after issue 16's heavy loop the gateway, the
backend host and the ingester each still counted 66-86 MiB of the store's pages, ~240 MiB of the
process tree's RSS for ~86 MiB the store actually used. MADV_DONTNEED on a shared file mapping
only unmaps: the pages stay in the file with their bytes, and a later read of a live object faults
the same bytes back in, so it is safe while objects are in use.
"""

from __future__ import annotations

import ctypes
import logging
import os

from svclog.libc import libc_function

log = logging.getLogger(__name__)

MADV_DONTNEED = 4  # linux/mman.h
OBJECT_STORE_PREFIX = "plasma"  # Ray's store file: /dev/shm/plasmaXXXXXX (deleted)

_madvise = libc_function("madvise", [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int], ctypes.c_int)


def shared_mappings(maps_text: str, prefix: str = OBJECT_STORE_PREFIX) -> list[tuple[int, int]]:
    """(address, length) of each shared mapping in a /proc/<pid>/maps text whose file name starts
    with `prefix`."""
    found = []
    for line in maps_text.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) < 6 or not fields[1].endswith("s"):  # a path, and mapped shared
            continue
        name = os.path.basename(fields[5].removesuffix(" (deleted)"))
        if name.startswith(prefix):
            low, high = (int(bound, 16) for bound in fields[0].split("-"))
            found.append((low, high - low))
    return found


def release_object_store_pages(prefix: str = OBJECT_STORE_PREFIX, maps_path: str = "/proc/self/maps") -> int:
    """Unmap the pages of this process's object-store mappings (they stay in the store); the bytes
    of mapping released, 0 where there is none or no madvise (not Linux)."""
    if _madvise is None:
        return 0
    try:
        with open(maps_path) as maps:
            mappings = shared_mappings(maps.read(), prefix)
    except OSError:
        return 0
    released = 0
    for address, length in mappings:
        if _madvise(address, length, MADV_DONTNEED) == 0:
            released += length
        else:
            log.debug("madvise of the object store mapping at %#x failed", address)
    return released
