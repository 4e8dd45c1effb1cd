"""The figures of a measured phase, computed from known times."""

import pytest

from optimist.report import latency, throughput, window_samples


def test_samples_count_every_second_and_fold_the_last_sliver():
    counts, rates = window_samples([0.1, 0.5, 1.2, 2.01, 2.02, 9.0], 0.0, 2.05)
    assert counts == [2, 1, 2]  # 9.0 is after the phase
    assert rates == [2.0, pytest.approx(3 / 1.05)]  # the last 0.05 s joins the second before
    assert window_samples([0.1, 0.2], 0.0, 0.5) == ([2], [4.0])


def test_throughput_averages_over_the_phase_and_has_percentiles():
    t = throughput(bound=30, duration=3.0, rates=[5.0, 10.0, 15.0])
    assert t["average"] == 10.0 and t["p50"] == 10.0 and t["p99"] > 14.8
    assert throughput(0, 3.0, [0.0, 0.0]) == {"average": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0}


def test_latency_has_percentiles_and_a_histogram():
    lat = latency([0.0005, 0.003, 0.003, 50.0])
    assert lat["count"] == 4 and lat["max"] == 50.0
    assert sum(lat["histogram"]["counts"]) == 4
    assert lat["histogram"]["counts"][0] == 1 and lat["histogram"]["counts"][-1] == 1
    assert latency([]) == {"count": 0}
