"""The harness's commands, joined to `optimist` through the `optimist.commands`
entry-point group (pyproject.toml): `bench`, `replay` and `replay-gpu-trace`."""
