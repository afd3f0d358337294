"""`ip("...")` matching for line filters and label filters.

A pattern is a single address, a CIDR prefix or an `a-b` range, IPv4 or IPv6. A text
matches when any address-looking run in it (found with the reference's prefix hints:
`d.`, `dd.`, `ddd.` for IPv4; `h:`, `::h`, ... for IPv6) falls inside the pattern.
Address parsing has no Arrow kernel, so matching runs once per distinct text.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from svclog.model import ParseError

_IPV4_CHARS = frozenset(b"0123456789.")
_IPV6_CHARS = frozenset(b"0123456789abcdefABCDEF:.")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_DIGITS = frozenset(b"0123456789")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def parse_ip_pattern(pattern: str) -> Callable[[Address], bool]:
    """A predicate for one address; raises ParseError for an invalid pattern."""
    try:
        single = ipaddress.ip_address(pattern)
        return lambda ip: ip == single
    except ValueError:
        pass
    if "/" in pattern:
        try:
            # Go's netip.ParsePrefix keeps host bits; contains() only looks at the prefix.
            network = ipaddress.ip_network(pattern, strict=False)
            return lambda ip: ip.version == network.version and ip in network
        except ValueError:
            pass
    if "-" in pattern:
        lo_text, _, hi_text = pattern.partition("-")
        try:
            lo, hi = ipaddress.ip_address(lo_text), ipaddress.ip_address(hi_text)
        except ValueError:
            pass
        else:
            # within one family, addresses order as their integers do
            version, first, last = lo.version, int(lo), int(hi)
            if version == hi.version and first <= last:
                return lambda ip: ip.version == version and first <= int(ip) <= last
    raise ParseError(f'ip: invalid pattern: "{pattern}"')


def _parse_address(text: bytes) -> Address | None:
    try:
        return ipaddress.ip_address(text.decode())
    except ValueError:
        return None


def _span(data: bytes, start: int, charset: frozenset[int]) -> int:
    end = start
    while end < len(data) and data[end] in charset:
        end += 1
    return end - start


def _ipv6_hint(d: bytes, i: int) -> bool:
    a, b, c, e, f = d[i], d[i + 1], d[i + 2], d[i + 3], d[i + 4]
    return (
        (a == 58 and b == 58 and c in _HEX)
        or (a in _HEX and b == 58)
        or (a in _HEX and b in _HEX and c == 58)
        or (a in _HEX and b in _HEX and c in _HEX and e == 58)
        or (a in _HEX and b in _HEX and c in _HEX and e in _HEX and f == 58)
    )


def text_contains_ip(text: str, predicate: Callable[[Address], bool]) -> bool:
    """The reference's scan: try each hinted run of address characters, left to right."""
    data = text.encode()
    n = len(data)
    i = 0
    while i < n:
        charset = None
        if i + 3 < n and data[i] in _DIGITS and 46 in (data[i + 1], data[i + 2], data[i + 3]):
            charset = _IPV4_CHARS
        elif i + 4 < n and _ipv6_hint(data, i):
            charset = _IPV6_CHARS
        if charset is not None:
            length = _span(data, i, charset)
            ip = _parse_address(data[i : i + length])
            if ip is not None and predicate(ip):
                return True
            i += length
        i += 1
    return False


def ip_mask(values: pa.Array, pattern: str) -> pa.Array:
    """True where the text holds an address matching the pattern (null where values is null)."""
    predicate = parse_ip_pattern(pattern)
    encoded = pc.dictionary_encode(values)
    hits = [text_contains_ip(text, predicate) if text else False for text in encoded.dictionary.to_pylist()]
    return pc.take(pa.array(hits, pa.bool_()), encoded.indices)
