"""Handing the C heap's freed pages back to the OS (glibc's malloc_trim), off the request path.

A querier runs sub-queries on several threads; the numpy arrays and Python objects they build come
from glibc's per-thread arenas, which keep what was freed (large blocks too, once glibc's adaptive
mmap threshold has grown). Measured at 1M bench lines: the querier's anonymous memory grew through the
query phases to ~440 MB and a malloc_trim(0) took it to ~170 MB. A trim of ~800 MB freed takes ~90 ms
and holds the arenas' locks meanwhile, so it runs on its own thread, at most once per interval.
"""

from __future__ import annotations

import ctypes
import logging
import threading
import time
from collections.abc import Callable

import pyarrow as pa

from svclog.libc import libc_function

log = logging.getLogger(__name__)


def libc_malloc_trim() -> Callable[[], object] | None:
    """glibc's malloc_trim(0), or None where the C library has none (musl, macOS)."""
    trim = libc_function("malloc_trim", [ctypes.c_size_t], ctypes.c_int)
    if trim is None:
        return None
    return lambda: trim(0)


class MallocTrimmer:
    """`request()` after work that freed memory; a daemon thread trims at most every `interval_s`."""

    def __init__(self, interval_s: float = 1.0, trim: Callable[[], object] | None = None):
        self.interval_s = interval_s
        self._trim = trim if trim is not None else libc_malloc_trim()
        self._wanted = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.trims = 0

    def request(self) -> None:
        if self._trim is None:
            return
        self._wanted.set()
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="malloc-trim", daemon=True)
                    self._thread.start()

    def _run(self) -> None:
        assert self._trim is not None  # only started when there is one
        while True:
            self._wanted.wait()
            self._wanted.clear()
            try:
                self._trim()
            except Exception:  # never take the process down for a memory hint
                log.exception("malloc_trim failed")
            self.trims += 1
            time.sleep(self.interval_s)


def release_unused(trimmer: MallocTrimmer) -> None:
    """Arrow's pool hands back what it freed now (mimalloc: the calling thread's heap; jemalloc:
    its arenas); glibc's arenas (numpy arrays, Python objects) are trimmed soon after on the
    trimmer's thread."""
    pa.default_memory_pool().release_unused()
    trimmer.request()
