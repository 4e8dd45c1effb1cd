"""The micro-benchmarks run at small size (their figures are read, never asserted)."""

import sys

from benchmarks import shard_micro


def test_shard_micro_decides_and_reports(monkeypatch, capsys):
    argv = ["shard_micro", "--nodes", "200", "--batch", "32", "--batches", "3", "--profile"]
    monkeypatch.setattr(sys, "argv", argv)
    shard_micro.main()
    out = capsys.readouterr().out
    assert "shard: 200 nodes, batch 32:" in out and "pods/s" in out
    assert "tottime" in out  # the profile was printed
