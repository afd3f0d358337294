"""Go text/template engine for LogQL `line_format` / `label_format`.

    t = Template.parse('{{ .status | printf "%5s" }} {{ __line__ }}')
    t.render(labels, line, ts_ns)

Parsed once, compiled to closures, rendered per entry against a map[string]string
of labels (missing labels read as ""), with Loki's function set.
"""

from __future__ import annotations

from collections.abc import Mapping

from svclog.logql.template import nodes as n
from svclog.logql.template.errors import TemplateError, TemplateExecError
from svclog.logql.template.exec import Compiler, State
from svclog.logql.template.functions import FUNCS
from svclog.logql.template.parser import parse

__all__ = ["Template", "TemplateError", "TemplateExecError"]


def _simple_parts(root: tuple[n.Node, ...]) -> tuple[tuple[bool, str], ...] | None:
    """(is_label, text) pieces when the template is only text and `{{ .label }}` actions."""
    parts: list[tuple[bool, str]] = []
    for node in root:
        if isinstance(node, n.Text):
            parts.append((False, node.text))
            continue
        if not isinstance(node, n.Action) or node.pipe.decl or len(node.pipe.cmds) != 1:
            return None
        args = node.pipe.cmds[0].args
        if len(args) != 1 or not isinstance(args[0], n.Field) or len(args[0].idents) != 1:
            return None
        parts.append((True, args[0].idents[0]))
    return tuple(parts)


class Template:
    """A compiled template; immutable and safe to share between pipelines."""

    __slots__ = ("_all_labels", "_labels", "_parts", "_root", "_run", "_uses_line", "text")

    def __init__(self, text: str, root: tuple[n.Node, ...], compiler: Compiler) -> None:
        self.text = text
        self._root = root
        self._run = compiler.root
        self._parts = _simple_parts(root)
        every = list(n.walk(root)) + [x for body in compiler.defs_src.values() for x in n.walk(body)]
        labels: set[str] = set()
        for node in every:
            if isinstance(node, n.Field):
                labels.add(node.idents[0])
            elif isinstance(node, n.Variable) and node.idents[0] == "$" and len(node.idents) > 1:
                labels.add(node.idents[1])
        self._labels = frozenset(labels)
        self._uses_line = any(isinstance(x, n.Identifier) and x.name == "__line__" for x in every)
        self._all_labels = any(
            isinstance(x, n.Dot) or (isinstance(x, n.Variable) and x.idents == ("$",)) for x in every
        )

    @classmethod
    def parse(cls, text: str, name: str = "line") -> Template:
        """Parse and compile; raises TemplateError. `name` only appears in error messages."""
        parsed = parse(text, FUNCS, name)
        return cls(text, parsed.root, Compiler(parsed, text, name))

    def render(self, labels: Mapping[str, str], line: str, ts_ns: int) -> str:
        """Execute for one entry; raises TemplateExecError (Loki: TemplateFormatErr)."""
        parts = self._parts
        if parts is not None:
            get = labels.get
            return "".join([get(t, "") if is_label else t for is_label, t in parts])
        st = State(labels, line, ts_ns)
        try:
            self._run(st, labels)
        except RecursionError:
            raise TemplateExecError("template: exceeded maximum template depth") from None
        return "".join(st.out)

    def referenced_labels(self) -> frozenset[str]:
        """Label names read through `.name` (or `$.name`); see also needs_all_labels()."""
        return self._labels

    def needs_all_labels(self) -> bool:
        """Whether the whole label map is used (`{{ . }}`, `range .`, `index . "x"`)."""
        return self._all_labels

    def uses_line(self) -> bool:
        return self._uses_line

    def __repr__(self) -> str:
        return f"Template({self.text!r})"
