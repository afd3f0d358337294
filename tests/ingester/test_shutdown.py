"""Ingester lifecycle without Ray: ring join with a token file, prepare-shutdown marker, shutdown, signals."""

from __future__ import annotations

import json

import pytest

from svclog.ingester.ingester import Ingester, IngesterSettings
from svclog.ingester.lifecycle import (
    Identity,
    IngesterLifecycle,
    ShutdownMarker,
    TokenFile,
    token_file_path,
)
from svclog.model import Labels, StreamColumns
from svclog.ring.ring import LEAVING, Ring, generate_tokens
from svclog.services import State
from svclog.storage.chunk_store import ChunkStore
from svclog.storage.objstore import ObjectStore


class RecordingRing:
    """RingMembership over a plain Ring, recording the calls in order."""

    def __init__(self):
        self.ring = Ring()
        self.calls: list[tuple] = []

    def register(self, member_id, address, node, tokens):
        self.calls.append(("register", member_id))
        self.ring.register(member_id, address, node, tokens=tokens)

    def set_state(self, member_id, state):
        self.calls.append(("set_state", member_id, state))
        self.ring.set_state(member_id, state)

    def forget(self, member_id):
        self.calls.append(("forget", member_id))
        return self.ring.forget(member_id)


class Setup:
    def __init__(self, tmp_path, token_path=""):
        self.tmp = tmp_path
        self.store = ObjectStore(str(tmp_path / "store"))
        self.wal = str(tmp_path / "wal" / "ing-0")
        self.ingester = Ingester(IngesterSettings("ing-0", self.wal), ChunkStore(self.store))
        self.ring = RecordingRing()
        self.stopped = 0
        self.lifecycle = IngesterLifecycle(
            Identity("ing-0", "ing-0", "node-a", 16),
            self.ring,
            self.ingester,
            ShutdownMarker(self.wal),
            TokenFile(token_path),
            stop_background=self._stop,
        )

    def _stop(self):
        self.stopped += 1
        self.ring.calls.append(("stop_background",))

    def push(self, n=5):
        self.ingester.push(
            "t",
            [StreamColumns(Labels({"app": "a"}.items()), list(range(1, n + 1)), [f"line {i}" for i in range(n)], None)],
        )


@pytest.fixture
def setup(tmp_path):
    s = Setup(tmp_path)
    s.lifecycle.join()
    return s


def test_join_registers_and_runs(setup):
    assert setup.lifecycle.state is State.RUNNING
    assert "ing-0" in setup.ring.ring.members
    assert setup.lifecycle.tokens == generate_tokens("ing-0", 16)


def test_prepare_shutdown_marker_is_a_file_that_survives_a_restart(setup, tmp_path):
    assert setup.lifecycle.prepare_shutdown() is False
    setup.lifecycle.set_prepare_shutdown(True)
    assert setup.lifecycle.prepare_shutdown() is True
    restarted = Setup(tmp_path)  # same WAL directory: a restarted process
    assert restarted.lifecycle.prepare_shutdown() is True
    restarted.lifecycle.set_prepare_shutdown(False)
    assert setup.lifecycle.prepare_shutdown() is False
    restarted.lifecycle.set_prepare_shutdown(False)  # unsetting twice is fine


def test_shutdown_leaves_the_ring_after_flushing(setup):
    setup.push()
    assert setup.ingester.memory_chunks() == 1
    report = setup.lifecycle.shutdown(flush=True)
    assert report.flushed_chunks == 1 and report.left_ring and not report.tokens_deleted
    assert setup.ingester.flush_queue_length() == 0
    assert "ing-0" not in setup.ring.ring.members
    # heartbeats stop first (none may re-register us), LEAVING is announced before the flush, forget last
    assert setup.ring.calls[1:] == [("stop_background",), ("set_state", "ing-0", LEAVING), ("forget", "ing-0")]
    assert setup.lifecycle.state is State.TERMINATED


def test_shutdown_without_flush_keeps_data_in_memory_and_wal(setup):
    setup.push()
    report = setup.lifecycle.shutdown(flush=False)
    assert report.flushed_chunks == 0 and setup.ingester.memory_chunks() == 1
    assert "ing-0" not in setup.ring.ring.members


def test_a_second_shutdown_returns_the_first_report(setup):
    first = setup.lifecycle.shutdown(flush=True)
    assert setup.lifecycle.shutdown(flush=False) is first
    assert setup.stopped == 1


def test_shutdown_clears_the_prepare_shutdown_marker(setup):
    setup.lifecycle.set_prepare_shutdown(True)
    setup.lifecycle.shutdown()
    assert setup.lifecycle.prepare_shutdown() is False


def test_failed_shutdown_marks_the_service_failed(setup):
    def broken(force=False):
        raise OSError("store down")

    setup.ingester.flush = broken
    with pytest.raises(OSError):
        setup.lifecycle.shutdown(flush=True)
    assert setup.lifecycle.state is State.FAILED


def test_token_file_is_written_on_join_reused_on_restart_and_deleted_on_request(tmp_path):
    path = token_file_path(str(tmp_path / "tokens"), "ing-0")
    assert path == str(tmp_path / "tokens.ing-0")
    first = Setup(tmp_path, path)
    tokens = first.lifecycle.join()
    with open(path) as f:
        assert tuple(json.load(f)["tokens"]) == tokens
    with open(path, "w") as f:  # tokens from the file win over generated ones
        json.dump({"tokens": [3, 1, 2]}, f)
    second = Setup(tmp_path, path)
    assert second.lifecycle.join() == (1, 2, 3)
    assert second.ring.ring.members["ing-0"].tokens == (1, 2, 3)
    report = second.lifecycle.shutdown(flush=False, delete_tokens=True)
    assert report.tokens_deleted
    assert not (tmp_path / "tokens.ing-0").exists()


def test_token_file_path_placeholder_and_disabled():
    assert token_file_path("/data/{id}/tokens", "ingester-1") == "/data/ingester-1/tokens"
    assert token_file_path("", "ingester-1") == ""
    assert TokenFile("").load() is None and TokenFile("").delete() is False


def test_unreadable_token_file_is_ignored(tmp_path):
    path = tmp_path / "tokens"
    path.write_text("not json")
    assert TokenFile(str(path)).load() is None


def test_signal_with_prepare_shutdown_leaves_and_flushes(setup):
    setup.push()
    setup.lifecycle.set_prepare_shutdown(True)
    report = setup.lifecycle.on_signal()
    assert report is not None and report.flushed_chunks == 1
    assert "ing-0" not in setup.ring.ring.members


def test_signal_without_prepare_shutdown_follows_the_defaults(setup):
    setup.push()
    assert setup.lifecycle.on_signal() is None  # nothing: the WAL keeps the data
    assert "ing-0" in setup.ring.ring.members and setup.ingester.memory_chunks() == 1
    report = setup.lifecycle.on_signal(default_flush=False, default_unregister=True)
    assert report.flushed_chunks == 0 and "ing-0" not in setup.ring.ring.members


class RingAway(Exception):
    """Stands for the actor layer's ActorUnavailable / call timeout: the ring's process restarts."""


def test_a_ring_away_at_join_leaves_the_ingester_running_for_its_heartbeats_to_register(tmp_path):
    # Ray does not restart an actor whose constructor raised: failing here would lose the ingester
    token_path = str(tmp_path / "tokens.json")
    s = Setup(tmp_path, token_path=token_path)
    s.lifecycle.ring_unavailable = (RingAway,)

    def away(*args):
        raise RingAway("the ring is restarting")

    s.ring.register = away
    tokens = s.lifecycle.join()
    assert s.lifecycle.state is State.RUNNING and tokens == s.lifecycle.tokens and len(tokens) == 16
    assert json.load(open(token_path))["tokens"] == list(tokens)  # what the heartbeats carry survives a restart
    assert "ing-0" not in s.ring.ring.members


def test_join_failure_marks_the_service_failed(tmp_path):
    s = Setup(tmp_path)

    def refuse(*args):
        raise ConnectionError("ring unreachable")

    s.ring.register = refuse
    with pytest.raises(ConnectionError):
        s.lifecycle.join()
    assert s.lifecycle.state is State.FAILED
