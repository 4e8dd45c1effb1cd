"""The `optimist` command line: the command itself (`main`: the app, its entry and the
commands installed beside it), one module per command, and the options they share
(`shared_options`). Importing a command's module builds no app, so the harness's
commands may import what they share without loading themselves again."""
