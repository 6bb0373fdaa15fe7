"""`acmemodel evaluate_failure` command(s)."""
