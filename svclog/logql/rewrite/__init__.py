"""Query rewrites for the distributed read path: time splitting, sharding by stream
fingerprint, and the merges that give back exactly the un-split answer."""

from svclog.logql.rewrite.plan import Plan, plan_query, shard
from svclog.logql.rewrite.shard import Combine, Downstream, shard_expr
from svclog.logql.rewrite.subquery import ShardedSource, SubQuery, evaluate_subquery
from svclog.logql.rewrite.time_split import split_by_time

__all__ = [
    "Combine",
    "Downstream",
    "Plan",
    "ShardedSource",
    "SubQuery",
    "evaluate_subquery",
    "plan_query",
    "shard",
    "shard_expr",
    "split_by_time",
]
