"""The HTML report: well formed, one chart per key present, nothing for keys absent."""

from html.parser import HTMLParser

from benchmarks.report.pages import render_html, write_html
from optimist.offline.quality import placement_quality
from tests.optimist.offline.test_quality import placement

VOID = {"meta", "br", "hr", "img", "input", "link"}


class Checker(HTMLParser):
    """Counts tags, and fails on an end tag that does not close the innermost open one."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.count: dict[str, int] = {}
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.count[tag] = self.count.get(tag, 0) + 1
        if tag not in VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.count[tag] = self.count.get(tag, 0) + 1

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, f"</{tag}> closes {self.open[-1:]}"
        self.open.pop()

    def handle_data(self, data):
        self.text.append(data)


def parse(page: str) -> Checker:
    checker = Checker()
    checker.feed(page)
    checker.close()
    assert checker.open == [], f"left open: {checker.open}"
    return checker


def bench_report() -> dict:
    run = {"throughput_pods_per_s": {"average": 900.0}, "attempts_per_pod": 1.02}
    return {
        "pods_created": 10000,
        "pods_scheduled": 9990,
        "pods_unschedulable": 10,
        "conflicts": 3,
        "attempts_per_pod": 1.0003,
        "duration_s": 7.5,
        "throughput_pods_per_s": {"average": 1333.3, "p50": 1400, "p90": 1500, "p99": 1600},
        "throughput_samples": [800, 1400, 1500, 1450, 1300, 900, 1200, 320],
        "latency_s": {
            "queue": {"p50": 0.01, "p90": 0.05, "p99": 0.2},
            "shard": {"p50": 0.002, "p90": 0.004, "p99": None},
            "not_measured": {"stages": "needs per-pod stage times"},
        },
        "sweep": {
            "variable": "shards",
            "runs": [{"value": v, "report": run} for v in (1, 2, 4)] + [{"value": 8, "report": {}}],
        },
        "quality": placement_quality(*placement()),
        "config": {"shards": 2, "profiles": [{}], "seed": "<script>alert(1)</script>"},
        "machine": {"cores": 2},
        "versions": {"python": "3.11"},
    }


def test_every_chart_of_a_full_report(tmp_path):
    path = tmp_path / "r.html"
    write_html(bench_report(), path)
    page = parse(path.read_text())
    # throughput, latency, sweep (pods/s, attempts per pod), stranded, pods per zone
    assert page.count["svg"] == 6
    text = " ".join(page.text)
    for heading in ("Throughput over time", "Latency", "Scaling: shards", "Placement quality"):
        assert heading in text
    assert "pods/s average" in text and "1,333" in text
    assert "script" not in page.count  # the config's text is escaped, not markup
    assert "<script>alert(1)</script>" in text


def test_absent_keys_leave_their_charts_out():
    page = parse(render_html({"pods_created": 5}))
    assert "svg" not in page.count
    assert "pods created" in " ".join(page.text)
    report = bench_report()
    for key in ("throughput_samples", "latency_s", "sweep"):
        del report[key]
    report["sweep"] = {"variable": "shards", "runs": []}
    page = parse(render_html(report))
    assert page.count["svg"] == 2  # only the quality charts


def test_several_workloads_draw_a_line_each():
    cases = [{"name": "a", "throughput_samples": [1, 2]}, {"name": "b", "throughput_samples": [3]}]
    page = parse(render_html({"cases": cases, "latency_s": {"not_measured": {"x": "why"}}}))
    assert page.count["svg"] == 1
    assert {"a", "b"} <= set(page.text)  # the legend names each line (text, not outlines)


def test_placements_are_compared_side_by_side():
    q = placement_quality(*placement())
    page = parse(render_html({"pods_replayed": 25, "quality": {"snapshot": q, "optimist": q}}))
    text = " ".join(page.text)
    assert "optimist replay" in text and "snapshot" in text and "optimist" in text
    assert page.count["svg"] == 2
    assert {"snapshot", "optimist", "CPU", "GPU"} <= set(page.text)  # legend and categories


def test_each_workload_run_has_a_row_of_its_figures_and_its_error():
    """A failed workload's figures stay on the page beside its error (what it measured
    until its op failed); each run is named as the terminal names it."""
    failed = {
        "name": "Solo/small",
        "error": "case Solo/small: op 1 (createPods): 5 of 10 <pods> not scheduled",
        "pods_created": 10,
        "pods_scheduled": 5,
        "pods_unschedulable": 5,
        "duration_s": 0.5,
        "throughput_pods_per_s": {"average": 10.0},
    }
    passed = {**failed, "name": "Basic/w[initNodes=7]", "error": None}
    page = parse(render_html({"cases": [failed, passed]}))
    text = page.text
    assert "Workloads" in text and "Solo/small" in text and "Basic/w[initNodes=7]" in text
    assert failed["error"] in text and "pods" not in page.count  # escaped, not markup
    assert text.count("0.50 s") == 2 and text.count("10") == 4  # created, and pods/s
    # the API bench: its runs, by scheduler and round, a run that never started blank
    runs = [{**failed, "scheduler": "optimist", "round": 0}]
    runs.append({"name": "Solo/small", "scheduler": "kube-scheduler", "round": 1, "error": "x"})
    text = parse(render_html({"runs": runs, "cases": []})).text
    assert {"Solo/small [optimist, round 1]", "Solo/small [kube-scheduler, round 2]"} <= set(text)
