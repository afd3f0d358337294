"""A C library function through ctypes, typed, or None where the C library lacks it (musl, macOS)."""

from __future__ import annotations

import ctypes
from typing import Any


def libc_function(name: str, argtypes: list[Any], restype: Any) -> Any | None:
    """The process's C library's `name` with its argument and result types set; ctypes releases the
    GIL around each call."""
    try:
        function = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None
    function.argtypes = argtypes
    function.restype = restype
    return function
