"""`acmemodel evaluate_runtime` command(s)."""
