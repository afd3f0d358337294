"""LevelFollower: a process follows the level shared by every replica and actor."""

from __future__ import annotations

import logging

import pytest

from svclog.log_level import LOGGER, LevelFollower, current_level


@pytest.fixture(autouse=True)
def restore_level():
    logger = logging.getLogger(LOGGER)
    before = logger.level
    yield
    logger.setLevel(before)


def test_follows_the_shared_level_and_reports_changes():
    shared = {"level": "debug"}
    follower = LevelFollower(lambda: shared["level"])
    assert follower.refresh() == ("debug", True) and current_level() == "debug"
    assert follower.refresh() == ("debug", False)
    shared["level"] = "error"
    assert follower.refresh() == ("error", True) and current_level() == "error"


def test_nothing_shared_or_an_unreadable_store_keeps_the_local_level():
    logging.getLogger(LOGGER).setLevel(logging.INFO)
    assert LevelFollower(lambda: None).refresh() == ("info", False)

    def broken():
        raise ConnectionError("store unreachable")

    assert LevelFollower(broken).refresh() == ("info", False)
    assert LevelFollower(lambda: "loud").refresh() == ("info", False)  # junk in the store
