"""Upstream's object templates, rendered per object as its harness renders them: Go's
text/template over the op's templateParams with `.Index` and `.Count` beside them.

Read here: text with `{{-`/`-}}` trimming and comments; pipelines (`a | f b`) of
fields (`.a.b`, `$x.a`, `(...).a`), variables (`{{$x := ...}}`, `{{$x = ...}}`),
literals and calls of the functions in `template_funcs`; `if`/`else if`/`else`,
`range` (over ints, lists and maps, with `$i, $v :=`) and `with`. Anything else
(`define`, `template`, `block`, `break`, `printf`...) is a `NotRendered` naming the
template and the action, never text left in the object.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cache, partial
from typing import Any, NoReturn

import yaml

from benchmarks.cases import go_decoding
from benchmarks.cases.template_funcs import (
    FUNCS,
    NOT_RENDERED,
    NotRendered,
    TemplateError,
    as_json_numbers,
    go_string,
    truth,
)

__all__ = ["NotRendered", "TemplateError", "TextTemplate"]

_TOKEN = re.compile(
    r"""(?P<space>\s+)
    |(?P<decl>:=)|(?P<punct>[()|=,])
    |(?P<string>"(?:[^"\\\n]|\\.)*"|`[^`]*`)
    |(?P<number>[-+]?(?:0[xX][0-9a-fA-F_]+|(?:\d[\d_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?))
    |(?P<field>\.[A-Za-z_]\w*)|(?P<dot>\.)
    |(?P<var>\$\w*)|(?P<ident>[A-Za-z_]\w*)""",
    re.VERBOSE,
)
_KEYWORDS = ("if", "else", "end", "range", "with")
_UNRENDERED_KEYWORDS = ("define", "template", "block", "break", "continue")
_SPACE = " \t\r\n"
_LAZY = ("and", "or")  # builtins that evaluate their arguments one by one, as needed


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str
    text: str
    spaced: bool  # whitespace before it: `(x).a` chains a field, `(x) .a` does not


@dataclass(frozen=True, slots=True)
class _Arg:
    """A value in a command: a field chain on dot, a variable, a literal, a function
    name, or a parenthesized pipeline, with the fields read after it."""

    kind: str  # "dot", "var", "literal", "ident", "pipe"
    value: Any
    chain: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Pipe:
    action: str  # the action as written, for errors
    variables: tuple[str, ...]
    assign: bool  # `=`, to variables declared before, not `:=`
    commands: tuple[tuple[_Arg, ...], ...]


@dataclass(frozen=True, slots=True)
class _Block:
    """`if`, `range` or `with`: its pipeline, the body, and the `else` part."""

    keyword: str
    pipe: _Pipe
    body: tuple[_Node, ...]
    otherwise: tuple[_Node, ...] = ()


_Node = str | _Pipe | _Block  # text, an action printing its value, a control structure


@dataclass(frozen=True, slots=True)
class _Action:
    tokens: list[_Token]
    body: str  # as written, for errors


class _Failure(Exception):
    """A template error before the action's text is known to the raiser."""


class _Parser:
    def __init__(self, name: str, source: str) -> None:
        self.name = name
        self.items = list(_split(name, source))
        self.at = 0

    def fail(self, action: _Action | None, problem: str, cls: type = TemplateError) -> NoReturn:
        where = f"{{{{{action.body}}}}}: " if action else ""
        raise cls(f"{self.name}: {where}{problem}")

    def nodes(self, until: tuple[str, ...] = ()) -> tuple[list[_Node], _Action | None]:
        """Nodes up to an action that starts with one of `until` (returned) or the end."""
        out: list[_Node] = []
        while self.at < len(self.items):
            item = self.items[self.at]
            self.at += 1
            if isinstance(item, str):
                out.append(item)
                continue
            head = item.tokens[0].text if item.tokens else ""
            if head in until:
                return out, item
            if head in ("else", "end"):
                self.fail(item, f"unexpected {head}")
            if head in _UNRENDERED_KEYWORDS:
                self.fail(item, f"{head!r} is not rendered", NotRendered)
            if head in ("if", "range", "with"):
                out.append(self.block(item, head, item.tokens[1:]))
            else:
                out.append(self.pipe(item, item.tokens))
        if until:
            self.fail(None, f"unexpected end of template: {' or '.join(until)} missing")
        return out, None

    def block(self, action: _Action, keyword: str, tokens: list[_Token]) -> _Block:
        pipe = self.pipe(action, tokens)
        body, ender = self.nodes(("else", "end"))
        otherwise: list[_Node] = []
        assert ender is not None
        rest = ender.tokens[1:]
        if ender.tokens[0].text == "else" and rest and rest[0].text in ("if", "with"):
            # `else if x` (or `else with x`): a block of its own that ends with this one
            otherwise = [self.block(ender, rest[0].text, rest[1:])]
        elif ender.tokens[0].text == "else":
            if rest:
                self.fail(ender, "unexpected words after else")
            otherwise, end = self.nodes(("end",))
            assert end is not None
            ender = end
        if ender.tokens[0].text == "end" and len(ender.tokens) > 1:
            self.fail(ender, "unexpected words after end")
        return _Block(keyword, pipe, tuple(body), tuple(otherwise))

    def pipe(self, action: _Action, tokens: list[_Token]) -> _Pipe:
        if not tokens:
            self.fail(action, "missing value for command")
        variables: list[str] = []
        assign = False
        at = 0
        while at < len(tokens) and tokens[at].kind == "var":
            if at + 1 < len(tokens) and tokens[at + 1].text in (":=", "=", ","):
                variables.append(tokens[at].text)
                sep = tokens[at + 1].text
                at += 2
                if sep != ",":
                    assign = sep == "="
                    break
            else:
                break
        commands: list[tuple[_Arg, ...]] = []
        args: list[_Arg] = []
        while at < len(tokens):
            token = tokens[at]
            if token.text == "|":
                if not args:
                    self.fail(action, "missing command before |")
                commands.append(tuple(args))
                args = []
                at += 1
                continue
            arg, at = self.arg(action, tokens, at)
            args.append(arg)
        if not args:
            self.fail(action, "missing value for command")
        commands.append(tuple(args))
        return _Pipe(action.body, tuple(variables), assign, tuple(commands))

    def arg(self, action: _Action, tokens: list[_Token], at: int) -> tuple[_Arg, int]:
        token = tokens[at]
        at += 1
        kind, text = token.kind, token.text
        if text == "(":
            depth, end = 1, at
            while end < len(tokens) and depth:
                depth += {"(": 1, ")": -1}.get(tokens[end].text, 0)
                end += 1
            if depth:
                self.fail(action, "unclosed left paren")
            made = _Arg("pipe", self.pipe(action, tokens[at : end - 1]))
            at = end
        elif kind == "field":
            made = _Arg("dot", None, (text[1:],))
        elif kind == "dot":
            made = _Arg("dot", None)
        elif kind == "var":
            made = _Arg("var", text)
        elif kind in ("string", "number") or text in ("true", "false", "nil"):
            made = _Arg("literal", _literal(token))
        elif kind == "ident" and (text in FUNCS or text in _LAZY):
            made = _Arg("ident", text)
        elif kind == "ident" and text in NOT_RENDERED:
            self.fail(action, f"function {text!r} is not rendered", NotRendered)
        elif kind == "ident":
            self.fail(action, f"function {text!r} not defined")
        else:
            self.fail(action, f"unexpected {text!r}")
        chain = list(made.chain)
        while at < len(tokens) and tokens[at].kind == "field" and not tokens[at].spaced:
            chain.append(tokens[at].text[1:])
            at += 1
        return replace(made, chain=tuple(chain)), at


def _literal(token: _Token) -> Any:
    """A string, number, bool or nil as Go's template parser reads it."""
    text = token.text
    if token.kind == "string":
        return text[1:-1] if text[0] == "`" else ast.literal_eval(text)
    if token.kind == "number":
        return _number(text)
    return {"true": True, "false": False, "nil": None}[text]


def _number(text: str) -> int | float:
    clean = text.replace("_", "")
    try:
        return int(clean, 0)
    except ValueError:
        return float(clean)


def _split(name: str, source: str) -> Iterator[str | _Action]:
    """The source as text and actions, trim markers applied and comments dropped."""
    at, trim_next = 0, False
    while True:
        start = source.find("{{", at)
        text = source[at : start if start >= 0 else len(source)]
        inner = start + 2
        left = start >= 0 and source[inner : inner + 2] in {"-" + c for c in _SPACE}
        text = text.lstrip(_SPACE) if trim_next else text
        text = text.rstrip(_SPACE) if left else text
        if text:
            yield text
        if start < 0:
            return
        inner += 2 if left else 0
        if source.startswith("/*", inner):  # a comment: right after the delimiter, as Go's
            close = source.find("*/", inner)
            end = source.find("}}", close + 2) if close >= 0 else -1
            if end < 0:
                raise TemplateError(f"{name}: unclosed comment")
            trim_next = source[close + 2 : end].strip(_SPACE) == "-"
            at = end + 2
            continue
        tokens, at, trim_next = _lex(name, source, inner)
        yield _Action(tokens, source[inner : at - (3 if trim_next else 2)].strip())


def _lex(name: str, source: str, at: int) -> tuple[list[_Token], int, bool]:
    """The tokens of the action from `at` to its `}}`; where it ends; whether `-}}`."""
    tokens: list[_Token] = []
    spaced = True
    while True:
        if source.startswith("}}", at):
            return tokens, at + 2, False
        if spaced and source.startswith("-}}", at):
            return tokens, at + 3, True
        found = _TOKEN.match(source, at)
        if found is None or found.end() == at:
            body = source[at : source.find("}}", at)] if "}}" in source[at:] else source[at:]
            raise TemplateError(f"{name}: {{{{{body.strip()}}}}}: cannot read {source[at]!r}")
        kind = found.lastgroup or ""
        if kind == "space":
            spaced = True
        else:
            text = found.group()
            if kind == "ident" and text in _KEYWORDS + _UNRENDERED_KEYWORDS:
                kind = "keyword"
            tokens.append(_Token(kind, text, spaced))
            spaced = False
        at = found.end()


def _given(value: Any) -> Any:
    return value


@cache
def _parse(name: str, source: str) -> tuple[_Node, ...]:
    nodes, _ = _Parser(name, source).nodes()
    return tuple(nodes)


class _Render:
    """One execution of a template: the output and the variables in scope."""

    def __init__(self, name: str, data: Mapping[str, Any]) -> None:
        self.name = name
        self.out: list[str] = []
        self.scopes: list[dict[str, Any]] = [{"$": data}]

    def nodes(self, nodes: tuple[_Node, ...], dot: Any) -> None:
        for node in nodes:
            if isinstance(node, str):
                self.out.append(node)
                continue
            pipe = node if isinstance(node, _Pipe) else node.pipe
            try:
                if isinstance(node, _Pipe):
                    value = self.pipe(node, dot)
                    if not node.variables:
                        self.out.append("<no value>" if value is None else go_string(value))
                    continue
                self.scopes.append({})
                try:
                    self.block(node, dot)
                finally:
                    self.scopes.pop()
            except _Failure as e:
                raise TemplateError(f"{self.name}: {{{{{pipe.action}}}}}: {e}") from e

    def block(self, block: _Block, dot: Any) -> None:
        if block.keyword != "range":
            value = self.pipe(block.pipe, dot)
            if truth(value):
                self.nodes(block.body, value if block.keyword == "with" else dot)
            else:
                self.nodes(block.otherwise, dot)
            return
        value = self.pipe(replace(block.pipe, variables=()), dot)
        items = list(self.items(value))
        names = block.pipe.variables
        for key, item in items:
            bound = (key, item)[-len(names) :] if names else ()  # one name: the item
            self.scopes.append(dict(zip(names, bound, strict=True)))
            try:
                self.nodes(block.body, item)
            finally:
                self.scopes.pop()
        if not items:
            self.nodes(block.otherwise, dot)

    def items(self, value: Any) -> Iterator[tuple[Any, Any]]:
        if value is None:
            return
        if isinstance(value, int) and not isinstance(value, bool):
            yield from ((i, i) for i in range(value))
        elif isinstance(value, list):
            yield from enumerate(value)
        elif isinstance(value, Mapping):
            yield from ((k, value[k]) for k in sorted(value))
        else:
            raise _Failure(f"range can't iterate over {go_string(value)}")

    def pipe(self, pipe: _Pipe, dot: Any) -> Any:
        value: Any = None
        for i, command in enumerate(pipe.commands):
            value = self.command(command, dot, (value,) if i else ())
        for name in pipe.variables:
            if not pipe.assign:
                self.scopes[-1][name] = value
                continue
            scope = next((s for s in reversed(self.scopes) if name in s), None)
            if scope is None:
                raise _Failure(f"undefined variable: {name}")
            scope[name] = value
        return value

    def command(self, args: tuple[_Arg, ...], dot: Any, piped: tuple[Any, ...]) -> Any:
        head = args[0]
        if head.kind != "ident":
            if len(args) > 1 or piped:
                raise _Failure("can't give argument to non-function")
            return self.arg(head, dot)
        name = head.value
        values: list[Callable[[], Any]] = [partial(self.arg, a, dot) for a in args[1:]]
        values += [partial(_given, p) for p in piped]
        if name in _LAZY:
            if not values:
                raise _Failure(f"wrong number of args for {name}: want at least 1 got 0")
            value = None
            for get in values:  # the first false (and) or true (or) value, or the last
                value = get()
                if truth(value) == (name == "or"):
                    break
            return value
        func, arity = FUNCS[name]
        if arity is not None and len(values) != arity:
            raise _Failure(f"wrong number of args for {name}: want {arity} got {len(values)}")
        try:
            return func(*(get() for get in values))
        except TemplateError as e:
            raise _Failure(f"error calling {name}: {e}") from e

    def arg(self, arg: _Arg, dot: Any) -> Any:
        if arg.kind == "ident":
            if arg.chain:
                raise _Failure(f"function {arg.value} has no fields")
            return self.command((arg,), dot, ())
        if arg.kind == "dot":
            value = dot
        elif arg.kind == "var":
            scope = next((s for s in reversed(self.scopes) if arg.value in s), None)
            if scope is None:
                raise _Failure(f"undefined variable: {arg.value}")
            value = scope[arg.value]
        elif arg.kind == "pipe":
            value = self.pipe(arg.value, dot)
        else:
            value = arg.value
        for name in arg.chain:
            if isinstance(value, Mapping):
                value = value.get(name)  # a missing key: Go's "no value"
            elif value is None:
                raise _Failure(f"nil pointer evaluating interface {{}}.{name}")
            else:
                raise _Failure(f"can't evaluate field {name} in {go_string(value)}")
        return value


# libyaml's safe loader where PyYAML has it: the same YAML as safe_load, ten times
# quicker, and a template is read once per object (10,000 nodes of their own)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True, slots=True)
class TextTemplate:
    """A template file whose objects differ by index: `render` makes the i-th.

    `params` are the op's templateParams, numbers as JSON decoding gives them
    (floats): `bind` sets them.
    """

    name: str  # the path as the case file gives it
    source: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def bind(self, params: Mapping[str, Any]) -> TextTemplate:
        return replace(self, params=as_json_numbers(dict(params)))

    def text(self, index: int, count: int | None) -> str:
        """The template executed for object `index` of `count` (no `.Count` where
        None, as upstream's createPodGroups gives none)."""
        data = {**self.params, "Index": index, **({} if count is None else {"Count": count})}
        render = _Render(self.name, data)
        nodes = _parse(self.name, self.source)
        render.nodes(nodes, data)
        return "".join(render.out)

    def render(self, index: int, count: int | None) -> Mapping[str, Any]:
        text = self.text(index, count)
        try:
            doc = yaml.load(text, Loader=_LOADER)
        except yaml.YAMLError as e:
            raise TemplateError(f"{self.name}: rendered, not YAML: {e}") from e
        if not isinstance(doc, Mapping) or not isinstance(doc.get("kind"), str):
            raise TemplateError(f"{self.name}: rendered, not a Kubernetes object (no kind)")
        return go_decoding.canonical(doc)

    @property
    def kind(self) -> str:
        return str(self.render(0, 1)["kind"])


def check(name: str, source: str) -> None:
    """Parse the template (once): a TemplateError for one Go would not parse, a
    NotRendered for one optimist does not render."""
    _parse(name, source)
