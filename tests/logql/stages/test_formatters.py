"""line_format / label_format behaviour with a stand-in template (the real one is tested elsewhere)."""

import re
import sys
import types

import pytest

from svclog.logql import ast
from svclog.logql.stages import line_format
from svclog.logql.stages.batch import ERROR_DETAILS_LABEL, ERROR_LABEL
from tests.logql.stages.helpers import col, run, series


class FakeExecError(Exception):
    pass


class FakeTemplate:
    """Understands `{{.name}}`, `{{__line__}}` and `{{fail}}`; enough to exercise the stages."""

    def __init__(self, text, name="line"):
        self.text = text

    def referenced_labels(self):
        return set(re.findall(r"\{\{\.(\w+)\}\}", self.text))

    def render(self, labels, line, ts_ns):
        if "{{fail}}" in self.text:
            raise FakeExecError("boom")
        out = self.text.replace("{{__line__}}", line)
        return re.sub(r"\{\{\.(\w+)\}\}", lambda m: labels.get(m.group(1), ""), out)


@pytest.fixture(autouse=True)
def fake_template(monkeypatch):
    module = types.ModuleType("svclog.logql.template")
    module.Template = types.SimpleNamespace(parse=FakeTemplate)
    module.TemplateExecError = FakeExecError
    monkeypatch.setitem(sys.modules, "svclog.logql.template", module)
    monkeypatch.setattr(line_format, "compile_template", FakeTemplate)


def test_line_format_replaces_line_and_sees_all_labels():
    b = run([ast.LogfmtParser(), ast.LineFormat("{{.status}} {{.app}} [{{__line__}}]")], "status=200", "x=1")
    assert b.line.to_pylist() == ["200 checkout [status=200]", " checkout [x=1]"]


def test_line_format_error_keeps_line():
    b = run([ast.LineFormat("{{fail}}")], "a")
    assert b.line.to_pylist() == ["a"]
    assert col(b, ERROR_LABEL) == ["TemplateFormatErr"]
    assert col(b, ERROR_DETAILS_LABEL) == ["boom"]


def test_label_format_rename_removes_source():
    op = ast.LabelFormatOp("u", "user", False)
    b = run([ast.LogfmtParser(), ast.LabelFormat((op,))], "user=u-1", "other=2")
    assert col(b, "u") == ["u-1", None]
    assert not b.has_label("user")


def test_label_format_rename_stream_label_and_template():
    ops = (ast.LabelFormatOp("a", "app", False), ast.LabelFormatOp("b", "x-{{.env}}", True))
    b = run([ast.LabelFormat(ops)], "line")
    assert list(series(b)) == ['{a="checkout", b="x-prod", env="prod", level="info"}']


def test_label_format_templates_share_one_snapshot():
    stage1 = ast.LabelFormat((ast.LabelFormatOp("x", "app", False),))
    stage2 = ast.LabelFormat((ast.LabelFormatOp("x", "{{.x}}!", True), ast.LabelFormatOp("y", "{{.x}}?", True)))
    b = run([stage1, stage2], "line")
    assert col(b, "x") == ["checkout!"]
    assert col(b, "y") == ["checkout?"]  # sees x before this stage's first template ran


def test_label_format_overwrites_stream_label_and_reports_errors():
    b = run([ast.LabelFormat((ast.LabelFormatOp("env", "E-{{.env}}", True),))], "line")
    assert col(b, "env") == ["E-prod"]
    b = run([ast.LabelFormat((ast.LabelFormatOp("env", "{{fail}}", True),))], "line")
    assert col(b, "env") == ["prod"]
    assert col(b, ERROR_LABEL) == ["TemplateFormatErr"]
