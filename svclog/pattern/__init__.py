"""Pattern ingester: streaming Drain-style log-pattern mining per tenant and stream.

Our own Drain tree rather than the `drain3` library: drain3 splits on whitespace and
joins templates with single spaces, so its templates lose tabs, newlines and repeated
spaces and do not match their lines as `|>` filters; its wildcards may also capture
empty or multi-word text. Here tokenisation keeps separators verbatim (tokens.py), which
makes every returned pattern a working `|>` filter for the lines it counted. The measured
comparison (speed, pattern counts, `|>` misses) is in docs/architecture.md, "Pattern miner:
ours or drain3".
"""

from svclog.pattern.drain import Cluster, Drain, DrainSettings
from svclog.pattern.ingester import PatternIngester, TenantPatterns
from svclog.pattern.stream import PatternSettings, StreamMiner
from svclog.pattern.tokens import WILDCARD, render, tokenize

__all__ = [
    "WILDCARD",
    "Cluster",
    "Drain",
    "DrainSettings",
    "PatternIngester",
    "PatternSettings",
    "StreamMiner",
    "TenantPatterns",
    "render",
    "tokenize",
]
