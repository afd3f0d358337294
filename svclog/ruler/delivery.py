"""HTTP POST with timeouts and retries, shared by the Alertmanager notifier and remote-write.

Network errors, 5xx and 429 are retried with exponential backoff; other 4xx answers are
final (the receiver refused the content, sending it again will not help).
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass


class DeliveryError(Exception):
    """A POST that failed for good: after the retries (`retryable`), or refused by the receiver."""

    def __init__(self, message: str, retryable: bool = True):
        super().__init__(message)
        self.retryable = retryable


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 3
    timeout_s: float = 10.0
    backoff_s: float = 0.2
    max_backoff_s: float = 2.0


DEFAULT_POLICY = RetryPolicy()


def _opener(proxy_url: str = "") -> urllib.request.OpenerDirector:
    # Explicit proxies only: an HTTP(S)_PROXY of the process must not reroute local receivers.
    proxies = {"http": proxy_url, "https": proxy_url} if proxy_url else {}
    return urllib.request.build_opener(urllib.request.ProxyHandler(proxies))


def post(
    url: str,
    body: bytes,
    headers: dict[str, str],
    policy: RetryPolicy = DEFAULT_POLICY,
    proxy_url: str = "",
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """POST `body`; returns the 2xx status or raises DeliveryError."""
    opener = _opener(proxy_url)
    last = ""
    for attempt in range(max(1, policy.attempts)):
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        try:
            with opener.open(request, timeout=policy.timeout_s) as response:
                response.read()
                return response.status
        except urllib.error.HTTPError as err:
            detail = err.read()[:512].decode(errors="replace").strip()
            last = f"HTTP {err.code}: {detail}" if detail else f"HTTP {err.code}"
            if err.code < 500 and err.code != 429:
                raise DeliveryError(f"POST {url}: {last}", retryable=False) from None
        except (urllib.error.URLError, OSError) as err:
            last = str(getattr(err, "reason", err))
        if attempt + 1 < policy.attempts:
            sleep(min(policy.backoff_s * (2**attempt), policy.max_backoff_s))
    raise DeliveryError(f"POST {url} failed after {policy.attempts} attempts: {last}")
