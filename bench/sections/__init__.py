"""One module per section of `python -m bench.run` (its `--only` names), each adding its rows to the report."""
