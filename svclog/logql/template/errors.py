"""Typed errors of the template engine: one for parse time, one for execution."""

from __future__ import annotations


class TemplateError(ValueError):
    """The template text does not parse (bad syntax, unknown function, undefined variable)."""


class TemplateExecError(Exception):
    """Executing a parsed template failed for one entry (Loki: `__error__=TemplateFormatErr`)."""
