"""The benchmark harness, installed above the scheduler it measures: `optimist bench`
and `optimist replay-gpu-trace` (`commands`), scheduler_perf's case files (`cases`)
run on a simulated cluster (`simulated`) or through a real API server (`apiserver`,
on the control plane of `controlplane`), what a run records (`report`), faults
injected (`chaos`), sweeps over one variable (`sweeps`), GPU trace replay (`gpu`),
the micro-benchmarks (`micro`), the soak, the fuzzers and upstream's own harness.
The result files it writes live under docs/results/."""
