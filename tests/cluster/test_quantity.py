from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cluster.errors import InvalidObject
from cluster.quantity import parse_quantity, quantity_field


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("100m", Fraction(1, 10)),
        ("0.5", Fraction(1, 2)),
        ("1", Fraction(1)),
        ("1Ki", Fraction(1024)),
        ("1.5Ki", Fraction(1536)),
        ("1Gi", Fraction(2**30)),
        ("1G", Fraction(10**9)),
        ("2e3", Fraction(2000)),
        ("2E3", Fraction(2000)),
        ("1e-3", Fraction(1, 1000)),
        ("1E", Fraction(10**18)),
        ("5.", Fraction(5)),
        (".5", Fraction(1, 2)),
        ("+2", Fraction(2)),
        ("-2", Fraction(-2)),
        ("1n", Fraction(1, 10**9)),
        ("3u", Fraction(3, 10**6)),
        ("12k", Fraction(12000)),
        ("7M", Fraction(7 * 10**6)),
        ("1Ti", Fraction(2**40)),
        ("1Pi", Fraction(2**50)),
        ("1Ei", Fraction(2**60)),
        (4, Fraction(4)),
        (0.25, Fraction(1, 4)),
    ],
)
def test_parses_like_kubernetes(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "",
        " 1",
        "1 ",
        "abc",
        "1.2.3",
        "1Ki1",
        "1e",
        "1ki",
        "1KiB",
        "1mi",
        "e3",
        "--1",
        "1e1.5",
        "Gi",
        ".",
    ],
)
def test_rejects_malformed(text):
    with pytest.raises(ValueError):
        parse_quantity(text)


def test_rounds_up_never_down():
    # MilliValue() and Value() round up: a request never shrinks into a node.
    assert quantity_field("Pod a/b", "cpu", "0.1m", milli=True, whole=False) == 1
    assert quantity_field("Pod a/b", "cpu", "1u", milli=True, whole=False) == 1
    assert quantity_field("Pod a/b", "memory", "0.5", milli=False, whole=False) == 1
    assert quantity_field("Pod a/b", "memory", "1.5Ki", milli=False, whole=False) == 1536
    assert quantity_field("Pod a/b", "cpu", "2", milli=True, whole=False) == 2000


def test_error_names_object_field_and_value():
    with pytest.raises(InvalidObject) as err:
        quantity_field(
            "Pod default/web-1",
            "spec.containers[0].resources.requests.cpu",
            "12x",
            milli=True,
            whole=False,
        )
    message = str(err.value)
    assert "Pod default/web-1" in message
    assert "spec.containers[0].resources.requests.cpu" in message
    assert "'12x'" in message


def test_negative_and_fractional_whole_rejected():
    with pytest.raises(InvalidObject, match="negative"):
        quantity_field("Pod a/b", "memory", "-1Gi", milli=False, whole=False)
    with pytest.raises(InvalidObject, match="whole number"):
        quantity_field("Pod a/b", "nvidia.com/gpu", "0.5", milli=False, whole=True)


@given(
    st.integers(min_value=0, max_value=10**12),
    st.sampled_from(["", "k", "M", "Ki", "Mi", "Gi", "m"]),
)
def test_integer_with_suffix_round_trips(n, suffix):
    factors = {
        "": 1,
        "k": 1000,
        "M": 10**6,
        "Ki": 1024,
        "Mi": 2**20,
        "Gi": 2**30,
        "m": Fraction(1, 1000),
    }
    assert parse_quantity(f"{n}{suffix}") == n * factors[suffix]


@given(st.text(max_size=12))
def test_never_crashes_on_any_text(text):
    try:
        value = parse_quantity(text)
    except ValueError:
        return
    assert isinstance(value, Fraction)
