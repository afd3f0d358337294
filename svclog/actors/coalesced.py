"""One background call for a burst of requests: a daemon thread runs the action soon after
`request()`, once however many requests came meanwhile, and at most once per `interval_s`."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


class CoalescedCall:
    """`request()` from any thread; the thread (named `name`, started on the first request) runs
    `action`, logging a failure and going on: a background chore never takes the process down."""

    def __init__(self, action: Callable[[], object], name: str, interval_s: float = 0.0):
        self.name = name
        self.interval_s = interval_s
        self._action = action
        self._wanted = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.runs = 0

    def request(self) -> None:
        self._wanted.set()
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                    self._thread.start()

    def _run(self) -> None:
        while True:
            self._wanted.wait()
            self._wanted.clear()
            try:
                self._action()
            except Exception:
                log.exception("%s failed", self.name)
            self.runs += 1
            time.sleep(self.interval_s)
