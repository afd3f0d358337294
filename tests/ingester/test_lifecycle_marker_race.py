"""Concurrent prepare-shutdown calls: each write renames a temporary file of its own."""

from __future__ import annotations

import os
import threading

from svclog.ingester.lifecycle import ShutdownMarker


def test_concurrent_sets_and_unsets_never_fail(tmp_path):
    marker = ShutdownMarker(str(tmp_path))
    errors: list[BaseException] = []

    def flip(n: int) -> None:
        try:
            for i in range(200):
                marker.set() if (i + n) % 3 else marker.unset()
        except BaseException as err:  # noqa: BLE001 - collected for the assertion
            errors.append(err)

    threads = [threading.Thread(target=flip, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]  # no leftovers
    marker.set()
    assert marker.is_set()
