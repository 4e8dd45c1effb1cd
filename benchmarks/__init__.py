"""Micro-benchmarks, upstream's own harness, the fuzzers and the result files the docs
quote: run from the repository (`python -m benchmarks.<name>`), never installed."""
