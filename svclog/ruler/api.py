"""The rules API (`/svc/api/v1/rules...`): list, get, set and delete rule groups of a tenant.

Reads answer YAML text; writes validate the group first (YAML, LogQL, names, templates,
per-tenant limits). `on_change(tenant)` lets the evaluator pick a change up at once
instead of at its next poll.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from svclog.model import NotFoundError, ValidationError
from svclog.ruler.rulefmt import RuleGroup, dump_yaml, group_to_dict, parse_group
from svclog.ruler.store import RuleStore


@dataclass(frozen=True)
class RuleLimits:
    max_rules_per_rule_group: int = 0  # 0 = unlimited
    max_rule_groups_per_tenant: int = 0


class NoRuleGroups(NotFoundError):
    def __init__(self, message: str = "no rule groups found") -> None:  # a default: it must pickle
        super().__init__(message)


def parse_label_filter(text: str | None) -> dict[str, str]:
    """`labels=name:value,name2:value2` (a rule matches when it has any of these pairs)."""
    pairs: dict[str, str] = {}
    for item in (text or "").split(","):
        if not item:
            continue
        name, sep, value = item.partition(":")
        if not sep:
            raise ValidationError(f"invalid label filter {item!r}: want name:value")
        pairs[name] = value
    return pairs


def _filter_by_labels(groups: list[RuleGroup], wanted: dict[str, str]) -> list[RuleGroup]:
    out = []
    for group in groups:
        rules = tuple(r for r in group.rules if any(wanted.get(k) == v for k, v in r.labels))
        if rules:
            out.append(RuleGroup(group.name, rules, group.interval_ns, group.limit))
    return out


class RulesAPI:
    def __init__(
        self,
        store: RuleStore,
        limits: Callable[[str], RuleLimits] = lambda tenant: RuleLimits(),
        on_change: Callable[[str], None] = lambda tenant: None,
    ):
        self.store = store
        self.limits = limits
        self.on_change = on_change

    def list_rules(self, tenant: str, namespace: str | None = None, labels: str | None = None) -> str:
        """YAML `namespace: [group, ...]` of the tenant (or of one namespace); 404 when empty."""
        found = self.store.list_groups(tenant, namespace)
        wanted = parse_label_filter(labels)
        if wanted:
            found = {ns: kept for ns, groups in found.items() if (kept := _filter_by_labels(groups, wanted))}
        if not found:
            raise NoRuleGroups()
        return dump_yaml({ns: [group_to_dict(g) for g in groups] for ns, groups in found.items()})

    def get_namespace(self, tenant: str, namespace: str) -> str:
        return self.list_rules(tenant, namespace)

    def get_group(self, tenant: str, namespace: str, name: str) -> str:
        return dump_yaml(group_to_dict(self.store.get_group(tenant, namespace, name)))

    def set_group(self, tenant: str, namespace: str, body: bytes | str) -> RuleGroup:
        group = parse_group(body)
        limits = self.limits(tenant)
        if 0 < limits.max_rules_per_rule_group < len(group.rules):
            raise ValidationError(
                f"per-user rules per rule group limit (limit: {limits.max_rules_per_rule_group} "
                f"actual: {len(group.rules)}) exceeded"
            )
        if limits.max_rule_groups_per_tenant > 0:
            existing = self.store.list_groups(tenant)
            count = sum(len(groups) for groups in existing.values())
            replacing = any(g.name == group.name for g in existing.get(namespace, []))
            if not replacing and count + 1 > limits.max_rule_groups_per_tenant:
                raise ValidationError(
                    f"per-user rule groups limit (limit: {limits.max_rule_groups_per_tenant} "
                    f"actual: {count + 1}) exceeded"
                )
        self.store.set_group(tenant, namespace, group)
        self.on_change(tenant)
        return group

    def delete_group(self, tenant: str, namespace: str, name: str) -> None:
        self.store.delete_group(tenant, namespace, name)
        self.on_change(tenant)

    def delete_namespace(self, tenant: str, namespace: str) -> None:
        self.store.delete_namespace(tenant, namespace)
        self.on_change(tenant)
