"""RE2 kernels that read one logfmt key from whole columns of lines (the hinted logfmt path).

Each full-line regex pass costs about the same (RE2's DFA, ~2 ns a byte), and capturing a
value at the end of a long anchored match is far slower (RE2 tracks submatches across the
whole prefix), so a key costs two passes on the common line:

1. `single_token_pattern(key)`, a capture-free anchored match: the line is plain logfmt (the
   scanner would see well-formed pairs only), `key=` is one of its tokens with a non-empty
   value, no other token is `key=...`, no whitespace-led `key=` comes before that token (not
   even inside a quoted value), and the token starts the line or follows a space;
2. `value_after_space_pattern(key)`, an unanchored extraction led by the literal ` key=`, which
   RE2 finds with a substring search: on such a line its first match is that token. A line
   that starts with the token takes `value_at_start_pattern(key)` instead.

Lines failing (1) go to the slower exact kernels of logfmt_parser, or to the scanner.
"""

from __future__ import annotations

import functools
import re

_WS = r"\x00-\x20"  # the decoder's separators (a class body)
_NOT_QUOTED = r'"\\\x{FFFD}'  # what plain quoted values never hold (a class body)
_BARE = rf'[^{_WS}="\x{{FFFD}}]'  # a plain unquoted value's characters
_KEY_START, _KEY_CHARS = "A-Za-z_", "A-Za-z0-9_"
_CLASS_CHARS = {"A-Z": "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "a-z": "abcdefghijklmnopqrstuvwxyz", "0-9": "0123456789", "_": "_"}
CLEAN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# A captured value: quoted (without its quotes) or bare; `matched_value` picks the one that matched.
_VALUE = r'(?:"(?P<quoted>[^"\\]+)"|(?P<bare>[^\x00-\x20="]+))'


def _without(cls: str, char: str) -> str:
    """A key-character class body (`A-Za-z0-9_` or a part of it) without `char`."""
    return "".join(chars.replace(char, "") for part, chars in _CLASS_CHARS.items() if part in cls)


def _other_key(key: str) -> str:
    """A clean key that is not `key`: it stops early, differs at some character, or goes on."""
    alts = [f"[{_without(_KEY_START, key[0])}][{_KEY_CHARS}]*"]
    for i in range(1, len(key)):
        alts.append(re.escape(key[:i]) + f"(?:[{_without(_KEY_CHARS, key[i])}][{_KEY_CHARS}]*)?")
    alts.append(re.escape(key) + f"[{_KEY_CHARS}]+")
    return "(?:" + "|".join(alts) + ")"


def _quoted_without(key: str) -> str:
    """Plain quoted-value content in which `key=` never follows a whitespace character.

    The forbidden word starts with a separator that `key` cannot contain, so a mismatch only
    ever restarts at a separator: from one, the text either returns to it (`again`), breaks
    away (`away`) or ends part-way into the key (`partial`)."""
    esc = re.escape
    again = "|".join([f"[{_WS}]"] + [esc(key[:i]) + f"[{_WS}]" for i in range(1, len(key) + 1)])
    away = "|".join(
        [f"[^{_NOT_QUOTED}{_WS}{esc(key[0])}]"]
        + [
            esc(key[:i]) + f"[^{_NOT_QUOTED}{_WS}{esc(key[i]) if i < len(key) else '='}]"
            for i in range(1, len(key) + 1)
        ]
    )
    partial = "".join(f"(?:{esc(c)}" for c in key) + ")?" * len(key)
    return f"(?:[^{_NOT_QUOTED}{_WS}]|[{_WS}](?:{again})*(?:{away}))*(?:[{_WS}](?:{again})*{partial})?"


def _pair(key_pattern: str, quoted: str) -> str:
    return f'{key_pattern}(?:=(?:"{quoted}"|{_BARE}*))?'


@functools.lru_cache(maxsize=256)  # built once per key, used per block
def single_token_pattern(key: str) -> str:
    """See the module docstring, step 1 (`key` must be a clean key)."""
    esc = re.escape(key)
    before = f"(?:{_pair(_other_key(key), _quoted_without(key))}|{esc})"  # the key bare: an empty value
    after = f"(?:{_pair(_other_key(key), f'[^{_NOT_QUOTED}]*')}|{esc})"
    value = f'(?:"[^{_NOT_QUOTED}]+"|{_BARE}+)'
    lead = f"(?:[{_WS}]*(?:{before}[{_WS}]+)*(?:{before})?[{_WS}]*[ ])?"
    return f"^{lead}{esc}={value}(?:[{_WS}]+{after})*[{_WS}]*$"


def value_after_space_pattern(key: str) -> str:
    return f" {re.escape(key)}={_VALUE}"


def value_at_start_pattern(key: str) -> str:
    return f"^{re.escape(key)}={_VALUE}"


@functools.lru_cache(maxsize=256)  # built once per key, used per block
def no_token_pattern(key: str) -> str:
    """A plain line none of whose tokens is `key=...` (the key's value is absent)."""
    pair = f"(?:{_pair(_other_key(key), f'[^{_NOT_QUOTED}]*')}|{re.escape(key)})"
    return f"^[{_WS}]*(?:{pair}(?:[{_WS}]+{pair})*)?[{_WS}]*$"
