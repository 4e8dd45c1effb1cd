"""Upstream's Go templates, rendered as text/template renders them with upstream's
template functions, over templateParams decoded as JSON decodes them."""

from __future__ import annotations

import pytest

from benchmarks.cases.go_template import NotRendered, TemplateError, TextTemplate
from benchmarks.cases.template_funcs import go_float


def text(source: str, params: dict | None = None, index: int = 7, count: int | None = 10) -> str:
    return TextTemplate("t.yaml", source).bind(params or {}).text(index, count)


def test_fields_calls_and_parentheses():
    assert text("n-{{.Index}}-{{ .Count }}") == "n-7-10"
    assert text("{{div .Index 2}} {{mod .Index 3}} {{mod (div .Index 2) 2}}") == "3 1 1"


def test_go_s_integer_division_truncates_toward_zero():
    assert text("{{div -7 2}} {{mod -7 2}} {{Mod -7 2}} {{DivideInt -7 2}}") == "-3 -1 -1 -3"


def test_trim_markers_and_comments_take_nothing_else():
    assert text("x  {{- .Index -}}  y") == "x7y"
    assert text("x {{/* a comment */}} y {{- /* and */ -}} z") == "x  yz"
    assert text("{{-3}}") == "-3"  # a negative number, not a trim marker


@pytest.mark.parametrize(
    ("source", "params", "out"),
    [
        (
            "{{AddInt 8000 (Mod .Index (DivideInt .podsCount .nodesCount))}}",
            {"podsCount": 12, "nodesCount": 4},
            "8001",
        ),
        ("{{AddInt .a 1 2.5}} {{AddFloat .a 0.5}}", {"a": 1}, "4 1.5"),
        ("{{SubtractInt 10 .a}} {{SubtractFloat 1 .a}}", {"a": 2.5}, "7 -1.5"),
        ("{{MultiplyInt 3 .a}} {{MultiplyFloat .a .a}}", {"a": 2.5}, "7 6.25"),
        ("{{DivideFloat 1 4}} {{DivideInt 30000 .Count}}", {}, "0.25 3000"),
        ('{{Int "42"}} {{Int 2.9}} {{.a | Int}}', {"a": 3}, "42 2 3"),
        (
            "{{JSON .a}}",
            {"a": {"b": [1, "x<y", True, None], "a": 0.5}},
            '{"a":0.5,"b":[1,"x<y",true,null]}',
        ),
        ("{{$s := (or .selectors nil) | JSON}}{{$s}}", {}, "null"),
        ("{{$n := or .numDevices 10}}{{$n}}", {}, "10"),
        (
            "{{$n := or .numDevices 10}}{{$n}}",
            {"numDevices": 64},
            "64",
        ),  # a float, printed as Go does
        ('{{$v := or .v "shared"}}{{$v}}', {}, "shared"),
        (
            "{{.n}} {{.big}} {{.small}} {{.frac}}",
            {"n": 3, "big": 1000000, "small": 0.00001, "frac": 1.5},
            "3 1e+06 1e-05 1.5",
        ),
        ("{{.missing}}", {}, "<no value>"),
        ("{{and 1 0 2}} {{and 1 2}} {{or 0 false}} {{not 0}}", {}, "0 2 false true"),
        ("{{if .p}}{{AddInt 0 .p}}{{else}}1000{{end}}", {"p": 5}, "5"),
        ("{{if .p}}{{AddInt 0 .p}}{{else}}1000{{end}}", {}, "1000"),
        ('{{if eq .m "single"}}s{{else if .m}}a{{else}}-{{end}}', {"m": "all"}, "a"),
        ('{{if eq .m "single"}}s{{else if .m}}a{{else}}-{{end}}', {}, "-"),
        ("{{if ge .Index 7}}y{{end}}{{if lt 1 2}}z{{end}}{{if ne 1 2}}n{{end}}", {}, "yzn"),
        ("{{range 3}}[{{.}}]{{end}}", {}, "[0][1][2]"),
        ("{{range $i := (.n | Int)}}{{$i}},{{end}}", {"n": 2}, "0,1,"),
        ("{{range $i, $v := .l}}{{$i}}={{$v}} {{end}}", {"l": ["a", "b"]}, "0=a 1=b "),
        ("{{range $k, $v := .m}}{{$k}}:{{$v}} {{end}}", {"m": {"b": 1, "a": 2}}, "a:2 b:1 "),
        ("{{range .l}}x{{else}}empty{{end}}", {"l": []}, "empty"),
        ("{{$x := 1}}{{range 2}}{{$x = AddInt $x 1}}{{end}}{{$x}}", {}, "3"),
        (
            "{{with .a}}{{.b}}{{else}}none{{end}} {{with .c}}x{{else}}none{{end}}",
            {"a": {"b": "in"}},
            "in none",
        ),
        (
            '{{len .s}} {{len .l}} {{index .l 1}} {{index .m "k"}}',
            {"s": "ab", "l": [1, 2], "m": {"k": "v"}},
            "2 2 2 v",
        ),
        ('{{print 1 2 "a" 3}}', {}, "1 2a3"),
        ("{{.a.b}} {{(index .l 0).b}}", {"a": {"b": 1}, "l": [{"b": "c"}]}, "1 c"),
        ('{{`raw`}} {{"q\\""}} {{true}} {{nil | JSON}}', {}, 'raw q" true null'),
    ],
)
def test_go_s_text_template_with_upstream_s_functions(source, params, out):
    assert text(source, params) == out


def test_upstream_s_pod_groups_have_no_count():
    assert text("{{.Index}}/{{.Count}}", index=2, count=None) == "2/<no value>"


def test_a_rendered_object_s_keys_are_read_as_upstream_s_decoder_reads_them():
    made = TextTemplate("t.yaml", "kind: Pod\nmetadata:\n  Name: p-{{.Index}}\n").render(3, 4)
    assert made == {"kind": "Pod", "metadata": {"name": "p-3"}}


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        (3.0, "3"),
        (100000.0, "100000"),
        (1e6, "1e+06"),
        (1234567.0, "1.234567e+06"),
        (0.0001, "0.0001"),
        (1.5e-7, "1.5e-07"),
        (-2.5, "-2.5"),
        (1e21, "1e+21"),
        (123456.5, "123456.5"),
    ],
)
def test_floats_print_as_go_s_fmt_prints_them(value, printed):
    assert go_float(value) == printed


@pytest.mark.parametrize(
    ("source", "cls", "said"),
    [
        ("{{add 1 2}}", TemplateError, "{{add 1 2}}: function 'add' not defined"),
        ("{{div 1}}", TemplateError, "{{div 1}}: wrong number of args for div: want 2 got 1"),
        (
            "{{.Index | printf}}",
            NotRendered,
            "{{.Index | printf}}: function 'printf' is not rendered",
        ),
        ('{{define "x"}}{{end}}', NotRendered, "'define' is not rendered"),
        ("{{if .Index}}x", TemplateError, "unexpected end of template: else or end missing"),
        ("{{end}}", TemplateError, "{{end}}: unexpected end"),
        (
            "{{DivideInt .Index .missing}}",
            TemplateError,
            "error calling DivideInt: cannot cast <nil> to float64",
        ),
        ("{{Mod 1 0}}", TemplateError, "error calling Mod: integer divide by zero"),
        ("{{DivideFloat 1 0}}", TemplateError, "error calling DivideFloat: division by zero"),
        ("{{eq .Index 1.5}}", TemplateError, "incompatible types for comparison"),
        ("{{range .f}}{{end}}", TemplateError, "range can't iterate over 2.5"),
        ("{{$y}}", TemplateError, "undefined variable: $y"),
        ("{{.Index.x}}", TemplateError, "can't evaluate field x in 7"),
        ("{{.Index 1}}", TemplateError, "can't give argument to non-function"),
    ],
)
def test_what_fails_or_is_not_rendered_is_an_error_naming_the_template_and_action(
    source, cls, said
):
    with pytest.raises(cls, match=r"^t\.yaml: ") as err:
        text(source, {"f": 2.5})
    assert said in str(err.value)
