import pytest

from cluster.durations import parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0.0),
        ("15s", 15.0),
        ("1m30s", 90.0),
        ("250ms", 0.25),
        ("1.5h", 5400.0),
        ("-2s", -2.0),
        ("5.s", 5.0),
        ("1h2m3.5s", 3723.5),
        ("100us", 1e-4),
    ],
)
def test_go_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


# durationpy reads days, weeks, months and years too; Go (and kube-scheduler) do not
@pytest.mark.parametrize(
    "text", ["", "15", "s", "1d", "2w", "1mm", "1y", "1s1d", "1s2", " 1s", "+"]
)
def test_not_durations(text):
    with pytest.raises(ValueError):
        parse_duration(text)
