"""Upstream's object templates with Go template fields, rendered per object as its
harness renders them (text/template over {Index, Count}, with `div` and `mod`):
`name: pod-{{.Index}}`, `{{div .Index 10}}`. The subset upstream's files use is
read: fields, integers, function calls and parentheses, `{{-`/`-}}` trimming; any
other action (if, range, pipelines, variables) is an error naming the template
and the action, never text left in the object.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from benchmarks.cases import go_decoding

_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.DOTALL)
_TOKEN = re.compile(r"\s*(\(|\)|\.[A-Za-z_]\w*|-?\d+|[A-Za-z_]\w*)")


def _div(a: int, b: int) -> int:
    return int(a / b)  # Go's integer division truncates toward zero


def _mod(a: int, b: int) -> int:
    return a - b * int(a / b)  # and its remainder takes the dividend's sign


FUNCS: Mapping[str, Callable[[int, int], int]] = {"div": _div, "mod": _mod}


class TemplateError(ValueError):
    """A template optimist cannot render; the message names the action."""


@dataclass(frozen=True, slots=True)
class TextTemplate:
    """A template file whose objects differ by index: `render` makes the i-th."""

    name: str  # the path as the case file gives it
    source: str

    def render(self, index: int, count: int) -> Mapping[str, Any]:
        env = {"Index": index, "Count": count}
        parts: list[str] = []
        at, trim = 0, False  # trim: the action before ended with -}}
        for m in _ACTION.finditer(self.source):
            text = self.source[at : m.start()]
            text = text.lstrip() if trim else text
            parts.append(text.rstrip() if m.group(1) else text)
            parts.append(str(_evaluate(self.name, m.group(2).strip(), env)))
            at, trim = m.end(), bool(m.group(3))
        rest = self.source[at:]
        parts.append(rest.lstrip() if trim else rest)
        doc = yaml.safe_load("".join(parts))
        if not isinstance(doc, Mapping) or not isinstance(doc.get("kind"), str):
            raise TemplateError(f"{self.name}: rendered, not a Kubernetes object (no kind)")
        return go_decoding.canonical(doc)

    @property
    def kind(self) -> str:
        return str(self.render(0, 1)["kind"])


def _evaluate(name: str, body: str, env: Mapping[str, int]) -> int:
    tokens = _tokens(name, body)
    value, rest = _expression(name, body, tokens, env)
    if rest:
        raise TemplateError(f"{name}: {{{{{body}}}}}: unexpected {' '.join(rest)!r}")
    return value


def _tokens(name: str, body: str) -> list[str]:
    tokens, at = [], 0
    while at < len(body):
        found = _TOKEN.match(body, at)
        if found is None:
            raise TemplateError(
                f"{name}: {{{{{body}}}}}: only fields, integers and calls of "
                f"{', '.join(FUNCS)} are rendered"
            )
        tokens.append(found.group(1))
        at = found.end()
    return tokens


def _expression(
    name: str, body: str, tokens: list[str], env: Mapping[str, int]
) -> tuple[int, list[str]]:
    """A call (`func arg...`) or a term; returns its value and the tokens after it."""
    if tokens and tokens[0] in FUNCS:
        func, rest = FUNCS[tokens[0]], tokens[1:]
        args = []
        while rest and rest[0] != ")":
            value, rest = _term(name, body, rest, env)
            args.append(value)
        if len(args) != 2:
            raise TemplateError(f"{name}: {{{{{body}}}}}: {tokens[0]} takes 2 arguments")
        return func(*args), rest
    return _term(name, body, tokens, env)


def _term(name: str, body: str, tokens: list[str], env: Mapping[str, int]) -> tuple[int, list[str]]:
    if not tokens:
        raise TemplateError(f"{name}: {{{{{body}}}}}: a value is missing")
    head, rest = tokens[0], tokens[1:]
    if head == "(":
        value, rest = _expression(name, body, rest, env)
        if not rest or rest[0] != ")":
            raise TemplateError(f"{name}: {{{{{body}}}}}: a ( is not closed")
        return value, rest[1:]
    if head.startswith("."):
        if head[1:] not in env:
            raise TemplateError(
                f"{name}: {{{{{body}}}}}: no field {head} (there are "
                f"{', '.join('.' + k for k in env)})"
            )
        return env[head[1:]], rest
    if head.lstrip("-").isdigit():
        return int(head), rest
    raise TemplateError(f"{name}: {{{{{body}}}}}: {head!r} is not rendered")
