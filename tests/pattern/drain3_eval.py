"""Not a test: the drain3 comparison in docs/architecture.md ("Pattern miner: ours or drain3").

Needs `pip install drain3`, conformance push bodies in /tmp/eval/conf (conformance/dataset.py
--out) and bench lines in /tmp/eval/bench.txt (bench.py --dump-lines FILE --prepare-only
--lines 200000); run from the repository root: `python -m tests.pattern.drain3_eval`.
Prints lines/s, pattern counts and how many lines their own pattern rejects as `|>`.
"""

from __future__ import annotations

import glob
import json
import time
from collections import defaultdict
from pathlib import Path

from drain3 import TemplateMiner
from drain3.template_miner_config import TemplateMinerConfig

from svclog.pattern import Drain, DrainSettings, tokenize
from tests.pattern.matching import unmatched


def conformance_streams() -> list[list[str]]:
    out = []
    for path in sorted(glob.glob("/tmp/eval/conf/*.json")):
        for stream in json.loads(Path(path).read_text())["streams"]:
            out.append([v[1] for v in stream["values"]])
    return out


def bench_streams() -> list[list[str]]:
    return [Path("/tmp/eval/bench.txt").read_text().splitlines()]


def ours(streams):
    results = []
    start = time.perf_counter()
    for lines in streams:
        drain = Drain(DrainSettings(similarity=0.3, prefix_words=2, max_children=32, max_clusters=300))
        counted = defaultdict(list)
        for line in lines:
            tokens = tokenize(line)
            if tokens.words:
                counted[drain.train(tokens).id].append(line)
        results.append({c.pattern: counted[c.id] for c in drain.clusters()})
    return time.perf_counter() - start, results


def theirs(streams, max_clusters=300):
    cfg = TemplateMinerConfig()
    cfg.drain_sim_th, cfg.drain_depth, cfg.drain_max_children, cfg.drain_max_clusters = 0.3, 4, 32, max_clusters
    cfg.masking_instructions, cfg.parametrize_numeric_tokens, cfg.profiling_enabled = [], True, False
    cfg.mask_prefix, cfg.mask_suffix = "<", ">"
    results = []
    start = time.perf_counter()
    for lines in streams:
        miner = TemplateMiner(config=cfg)
        miner.drain.param_str = "<_>"
        counted = defaultdict(list)
        for line in lines:
            counted[miner.add_log_message(line)["cluster_id"]].append(line)
        results.append({c.get_template(): counted[c.cluster_id] for c in miner.drain.clusters})
    return time.perf_counter() - start, results


def report(name, seconds, results, total):
    patterns = sum(len(r) for r in results)
    distinct = len({p for r in results for p in r})
    counted = sum(len(v) for r in results for v in r.values())
    bad = sum(len(unmatched(p, v)) for r in results for p, v in r.items())
    print(
        f"{name}: {total / seconds:,.0f} lines/s ({seconds:.2f} s), {patterns} patterns ({distinct} distinct), "
        f"{counted} lines in live clusters, {bad} ({100 * bad / max(counted, 1):.1f}%) not matched by "
        f"their own pattern as |>"
    )
    top = sorted(((len(v), p) for r in results for p, v in r.items()), reverse=True)[:6]
    for n, p in top:
        print(f"    {n:7d}  {p[:150]!r}")


if __name__ == "__main__":
    for label, streams in (("conformance", conformance_streams()), ("bench", bench_streams())):
        total = sum(len(s) for s in streams)
        print(f"== {label}: {total} lines in {len(streams)} streams")
        report("svclog", *ours(streams), total)
        report("drain3", *theirs(streams), total)
        if label == "conformance":  # on the 200k bench lines it ran over 10 minutes
            report("drain3 unbounded clusters", *theirs(streams, None), total)
