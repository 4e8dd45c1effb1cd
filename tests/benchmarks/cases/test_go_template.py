"""Upstream's Go template fields, rendered as text/template renders them."""

from __future__ import annotations

import pytest

from benchmarks.cases.go_template import TemplateError, TextTemplate


def render(text: str, index: int = 7, count: int = 10) -> dict:
    return dict(TextTemplate("t.yaml", f"kind: Pod\n{text}").render(index, count))


def test_fields_calls_and_parentheses():
    assert render("a: n-{{.Index}}-{{ .Count }}")["a"] == "n-7-10"
    assert render("a: '{{div .Index 2}} {{mod .Index 3}} {{mod (div .Index 2) 2}}'")["a"] == "3 1 1"


def test_go_s_integer_division_truncates_toward_zero():
    assert render("a: '{{div -7 2}} {{mod -7 2}}'")["a"] == "-3 -1"  # not Python's -4 and 1


def test_trim_markers_take_the_whitespace_beside_them():
    assert render("a: 'x  {{- .Index -}}  y'")["a"] == "x7y"


@pytest.mark.parametrize(
    ("action", "said"),
    [
        ("{{if .Index}}x{{end}}", "'if' is not rendered"),
        ("{{.Name}}", "no field .Name (there are .Index, .Count)"),
        ("{{add 1 2}}", "'add' is not rendered"),
        ("{{div 1}}", "div takes 2 arguments"),
        ("{{.Index | printf}}", "only fields, integers and calls"),
    ],
)
def test_what_is_not_rendered_is_an_error_naming_the_action(action, said):
    with pytest.raises(TemplateError, match=r"^t\.yaml: ") as err:
        render(f"a: '{action}'")
    assert said in str(err.value)
