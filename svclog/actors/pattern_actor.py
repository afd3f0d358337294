"""Ray host of the pattern ingester: lines teed by the distributor in, patterns out.

Patterns are a best-effort, in-memory view (as the reference's pattern ingester): the
actor restarts empty, so a failed tee must never fail a push.
"""

from __future__ import annotations

import logging
import threading
import time

import ray

from svclog.actors.calls import call_cancelled
from svclog.actors.options import PATTERN_INGESTER_NAME
from svclog.config import Config
from svclog.log_level import apply_level
from svclog.logql.engine.guard import QueryLimits
from svclog.model import Matcher, StreamColumns
from svclog.pattern import DrainSettings, PatternIngester, PatternSettings

log = logging.getLogger(__name__)
_LOG_EVERY_S = 60.0


def pattern_settings(cfg: Config) -> PatternSettings:
    pi = cfg.pattern_ingester
    return PatternSettings(
        sample_interval_ns=pi.pattern_sample_interval,
        retain_for_ns=pi.retain_for,
        max_line_length=pi.max_allowed_line_length,
        drain=DrainSettings(max_clusters=pi.max_clusters),
    )


class PatternActor:
    def __init__(self, cfg: Config):
        apply_level(cfg.server.log_level)  # the configured level; a POSTed one arrives from the gateways
        self.ingester = PatternIngester(pattern_settings(cfg))
        # max_concurrency > 1 keeps queries answering during a big push; the miner is not thread-safe.
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._period_s = max(1.0, cfg.pattern_ingester.flush_check_period / 1e9)
        self.failed_batches = 0
        self._failures_unlogged = 0
        self._logged_at: float | None = None
        threading.Thread(target=self._background, name="pattern-prune", daemon=True).start()

    def _background(self) -> None:
        while not self._stop.wait(self._period_s):
            try:
                with self._lock:
                    self.ingester.drop_idle()
            except Exception:
                log.exception("pattern ingester background loop")

    # ------------------------------------------------------------ remote API

    def ready(self) -> str:
        return PATTERN_INGESTER_NAME

    def set_log_level(self, level: str) -> str:
        return apply_level(level)

    def push(self, tenant: str, streams: list[StreamColumns], weight: int = 1) -> int:
        with self._lock:
            return self.ingester.push(tenant, streams, weight)

    def push_batches(self, batches: list[tuple[str, list[StreamColumns], int]]) -> int:
        """The tee's flush. Nobody awaits this call, so a batch that fails is logged (at most
        once a minute) and skipped here: it must not cost the other tenants their batches."""
        counted = 0
        with self._lock:
            for tenant, streams, weight in batches:
                try:
                    counted += self.ingester.push(tenant, streams, weight)
                except Exception as err:  # noqa: BLE001 - logged by _report_failure
                    self._report_failure(tenant, err)
        return counted

    def _report_failure(self, tenant: str, err: Exception) -> None:
        self.failed_batches += 1
        self._failures_unlogged += 1
        now = time.monotonic()
        if self._logged_at is not None and now - self._logged_at < _LOG_EVERY_S:
            return
        log.error(
            "pattern ingester: %d teed batch(es) failed since the last report (latest of tenant %s)",
            self._failures_unlogged,
            tenant,
            exc_info=err,
        )
        self._logged_at, self._failures_unlogged = now, 0

    def patterns(
        self,
        tenant: str,
        matchers: list[Matcher],
        start_ns: int,
        end_ns: int,
        step_ns: int = 0,
        limits: QueryLimits | None = None,
    ) -> list[dict]:
        """Under the query's deadline, and stopped when the caller cancels the call (ray.cancel:
        the gateway timed out or its HTTP client went away)."""
        guard = (limits or QueryLimits()).guard(cancelled_elsewhere=call_cancelled)
        with self._lock:
            return self.ingester.patterns(tenant, matchers, start_ns, end_ns, step_ns, guard)

    def stats(self) -> dict:
        with self._lock:
            return {**self.ingester.stats(), "failed_batches": self.failed_batches}


RemotePatternIngester = ray.remote(PatternActor)
