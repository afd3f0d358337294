"""The runtime log level of svclog's loggers (`/log_level`): parse, apply, read back.

Every svclog module logs under the `svclog` logger tree, so one level on that logger
governs the process (handlers stay as the host configured them).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "error": logging.ERROR}
NAMES = {value: key for key, value in LEVELS.items()}
LOGGER = "svclog"


class InvalidLogLevel(ValueError):
    """A `log_level` outside debug, info, warn, error."""


def parse_level(text: str | None) -> int:
    name = (text or "").strip().lower()
    if name == "warning":
        name = "warn"
    if name not in LEVELS:
        raise InvalidLogLevel(f"invalid log level {text!r}: use one of {', '.join(LEVELS)}")
    return LEVELS[name]


def apply_level(text: str) -> str:
    """Set the svclog logger tree to `text`; returns the canonical name. Raises InvalidLogLevel."""
    level = parse_level(text)
    logging.getLogger(LOGGER).setLevel(level)
    return NAMES[level]


def current_level() -> str:
    """The effective level of the svclog loggers, as one of the `log_level` names."""
    level = logging.getLogger(LOGGER).getEffectiveLevel()
    if level in NAMES:
        return NAMES[level]
    # levels between the named ones (e.g. NOTSET children, CRITICAL) map to the nearest name below
    below = [value for value in NAMES if value <= level]
    return NAMES[max(below)] if below else "debug"


class LevelFollower:
    """Keeps this process's level equal to a level shared by every process (a POST on one replica
    must reach them all): `refresh()` reads the shared level through `read` and applies it.

    `read` returns a level name or None (nothing shared yet); an unreadable or invalid shared
    value leaves the local level as it is."""

    def __init__(self, read: Callable[[], str | None]):
        self.read = read
        self.seen: str | None = None

    def refresh(self) -> tuple[str, bool]:
        """(the level now in force, whether the shared level changed since the last refresh)."""
        try:
            shared = self.read()
            level = apply_level(shared) if shared else None
        except Exception:  # noqa: BLE001 - the shared store is briefly unreachable, or holds junk
            level = None
        changed = level is not None and level != self.seen
        if level is not None:
            self.seen = level
        return current_level(), changed
