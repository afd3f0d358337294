"""Rule groups: the YAML format (Prometheus rule-file shape), decoding, validation and encoding.

A group is `{name, interval?, limit?, rules: [...]}`; a rule is either a recording rule
(`record`, `expr`, `labels`) or an alerting rule (`alert`, `expr`, `for`, `labels`,
`annotations`). `expr` must be a LogQL metric query. Unknown keys are ignored, as the
reference's lenient decoder does; duplicate keys in one mapping are an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from svclog.gocompat.durations import format_prom_duration
from svclog.logql import ast
from svclog.logql.parser import parse
from svclog.model import NS, ParseError, ValidationError, is_valid_label_name, parse_prom_duration
from svclog.ruler.template import TemplateError, check_template

_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
BAD_GROUP = "unable to decoded rule group"  # the reference's wording, kept for clients that match it


@dataclass(frozen=True)
class Rule:
    expr: str
    record: str = ""
    alert: str = ""
    for_ns: int = 0
    labels: tuple[tuple[str, str], ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()

    @property
    def name(self) -> str:
        return self.alert or self.record

    @property
    def is_alert(self) -> bool:
        return bool(self.alert)


@dataclass(frozen=True)
class RuleGroup:
    name: str
    rules: tuple[Rule, ...] = ()
    interval_ns: int = 0  # 0 = the ruler's evaluation_interval
    limit: int = 0


# ---------------------------------------------------------------- YAML decoding


class _StrictLoader(yaml.BaseLoader):
    """Every scalar stays a string (so `1.10` keeps its text); duplicate keys are refused."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"mapping key {key!r} already defined", key_node.start_mark
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


# A rule group nests six levels deep; PyYAML composes nodes recursively, so a deeply nested
# document (`[[[[...`) would exhaust the interpreter's stack: refuse it from the event stream first.
MAX_YAML_DEPTH = 64


def load_yaml(text: str | bytes) -> Any:
    try:
        _check_depth(text)
        return yaml.load(text, Loader=_StrictLoader)  # BaseLoader: plain strings, no objects
    except yaml.YAMLError as err:
        raise ValidationError(f"{BAD_GROUP}: {_yaml_reason(err)}") from None
    except RecursionError:  # a safety net: the depth check should have refused it
        raise ValidationError(f"{BAD_GROUP}: yaml: exceeded max depth of {MAX_YAML_DEPTH}") from None


# LibYAML's event parser when PyYAML has it: the pure-Python scanner keeps every unclosed `[` of
# a line as a possible simple key and re-checks them all per token, so reaching depth 64 of a
# `[` x10000 flow took it 0.5-6 s (quadratic in the line's first 1024 characters); LibYAML, ~15 ms.
_EVENT_LOADER = getattr(yaml, "CBaseLoader", yaml.BaseLoader) if yaml.__with_libyaml__ else yaml.BaseLoader


def _check_depth(text: str | bytes) -> None:
    """Walk the parser's events (iterative, stops early) and refuse nesting beyond MAX_YAML_DEPTH.
    A document the event parser cannot read is left to the full load, whose error is reported."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=_EVENT_LOADER):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    line = event.start_mark.line + 1 if event.start_mark is not None else 0  # the parser sets it
                    raise ValidationError(f"{BAD_GROUP}: yaml: line {line}: exceeded max depth of {MAX_YAML_DEPTH}")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError:
        return


def _yaml_reason(err: yaml.YAMLError) -> str:
    return " ".join(str(err).split())


def _mapping(value: Any, what: str) -> dict:
    if value is None or value == "":
        return {}
    if not isinstance(value, dict):
        raise ValidationError(f"{BAD_GROUP}: {what} must be a mapping")
    return value


def _string(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValidationError(f"{BAD_GROUP}: {what} must be a string")
    return value


def _duration(value: Any, what: str) -> int:
    text = _string(value, what).strip()
    if not text:
        return 0
    try:
        return parse_prom_duration(text)
    except ValidationError:
        raise ValidationError(f"{BAD_GROUP}: {what}: not a valid duration string: {text!r}") from None


def _string_map(value: Any, what: str) -> tuple[tuple[str, str], ...]:
    items = _mapping(value, what)
    return tuple((str(k), _string(v, f"{what}.{k}")) for k, v in items.items())


def decode_rule(node: Any, index: int) -> Rule:
    data = _mapping(node, f"rules[{index}]")
    return Rule(
        expr=_string(data.get("expr"), "expr"),
        record=_string(data.get("record"), "record"),
        alert=_string(data.get("alert"), "alert"),
        for_ns=_duration(data.get("for"), "for"),
        labels=_string_map(data.get("labels"), "labels"),
        annotations=_string_map(data.get("annotations"), "annotations"),
    )


def decode_group(node: Any) -> RuleGroup:
    data = _mapping(node, "rule group")
    rules = data.get("rules")
    if rules is None or rules == "":
        rules = []
    if not isinstance(rules, list):
        raise ValidationError(f"{BAD_GROUP}: rules must be a list")
    limit_text = _string(data.get("limit"), "limit").strip()
    if limit_text and not limit_text.isdigit():
        raise ValidationError(f"{BAD_GROUP}: limit must be a non-negative integer")
    return RuleGroup(
        name=_string(data.get("name"), "name"),
        rules=tuple(decode_rule(r, i) for i, r in enumerate(rules)),
        interval_ns=_duration(data.get("interval"), "interval"),
        limit=int(limit_text or 0),
    )


def parse_group(text: str | bytes) -> RuleGroup:
    """One rule group (the body of `POST /rules/{namespace}`), decoded and validated."""
    group = decode_group(load_yaml(text))
    errors = validate_group(group)
    if errors:
        raise ValidationError(", ".join(errors))
    return group


def parse_rule_file(text: str | bytes) -> list[RuleGroup]:
    """A whole namespace file `{groups: [...]}`; group names must be unique in it."""
    data = _mapping(load_yaml(text), "rule file")
    nodes = data.get("groups") or []
    if not isinstance(nodes, list):
        raise ValidationError(f"{BAD_GROUP}: groups must be a list")
    groups = [decode_group(n) for n in nodes]
    errors: list[str] = []
    seen: set[str] = set()
    for group in groups:
        if group.name in seen:
            errors.append(f'groupname: "{group.name}" is repeated in the same file')
        seen.add(group.name)
        errors.extend(validate_group(group))
    if errors:
        raise ValidationError(", ".join(errors))
    return groups


# ---------------------------------------------------------------- validation


def validate_group(group: RuleGroup) -> list[str]:
    if not group.name:
        return ["invalid rules config: rule group name must not be empty"]
    if not group.rules:
        return [f"invalid rules config: rule group '{group.name}' has no rules"]
    errors = []
    for index, rule in enumerate(group.rules):
        problem = validate_rule(rule, group.name)
        if problem:
            errors.append(f"group {group.name!r}, rule {index + 1}, {rule.name!r}: {problem}")
    return errors


def validate_rule(rule: Rule, group_name: str) -> str | None:
    """The first problem of a rule, or None."""
    if rule.record and rule.alert:
        return "only one of 'record' and 'alert' must be set"
    if not rule.record and not rule.alert:
        return "one of 'record' or 'alert' must be set"
    if not rule.expr:
        return "field 'expr' must be set in rule"
    kind = "record" if rule.record else "alert"
    try:
        expr = parse(rule.expr)
    except ParseError as err:
        return f"could not parse expression for {kind} '{rule.name}' in group '{group_name}': {err}"
    if ast.is_log_query(expr):
        return (
            f"invalid expression for {kind} '{rule.name}' in group '{group_name}': "
            "a rule needs a metric query, not a log query"
        )
    if rule.record:
        if rule.annotations:
            return "invalid field 'annotations' in recording rule"
        if rule.for_ns:
            return "invalid field 'for' in recording rule"
        if not _METRIC_NAME.match(rule.record):
            return f"invalid recording rule name: {rule.record}"
    for name, _ in rule.labels:
        if not is_valid_label_name(name) or name == "__name__":
            return f"invalid label name: {name}"
    for name, _ in rule.annotations:
        if not is_valid_label_name(name):
            return f"invalid annotation name: {name}"
    for kind_name, items in (("label", rule.labels), ("annotation", rule.annotations)):
        for name, text in items:
            try:
                check_template(text)
            except TemplateError as err:
                return f"error parsing {kind_name} template {name!r}: {err}"
    return None


# ---------------------------------------------------------------- encoding

format_duration = format_prom_duration  # Prometheus duration text: `2m`, `1h30m`, `1w`, years and weeks when exact


def rule_to_dict(rule: Rule) -> dict:
    out: dict[str, Any] = {"record": rule.record} if rule.record else {"alert": rule.alert}
    out["expr"] = rule.expr
    if rule.for_ns:
        out["for"] = format_duration(rule.for_ns)
    if rule.labels:
        out["labels"] = dict(rule.labels)
    if rule.annotations:
        out["annotations"] = dict(rule.annotations)
    return out


def group_to_dict(group: RuleGroup) -> dict:
    out: dict[str, Any] = {"name": group.name}
    if group.interval_ns:
        out["interval"] = format_duration(group.interval_ns)
    if group.limit:
        out["limit"] = group.limit
    out["rules"] = [rule_to_dict(r) for r in group.rules]
    return out


class _IndentedDumper(yaml.SafeDumper):
    """Lists indented under their key, as the reference's YAML encoder writes them."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def dump_yaml(data: Any) -> str:
    return yaml.dump(
        data, Dumper=_IndentedDumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1 << 16
    )


def effective_interval(group: RuleGroup, default_ns: int) -> int:
    return group.interval_ns or default_ns or 60 * NS
