"""The offline tools: the simulated cluster (`simulator`) that replays and benches run
against, the invariant checker run after every end-to-end run (`invariants`), the
placement quality of a cluster's state (`quality`), a snapshot replayed through the
shards (`replay`) and explained (`explain_snapshot`), and what a result file records
of where it came from (`provenance`). None of them runs in the deployed scheduler."""
