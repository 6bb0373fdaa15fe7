"""`acmemodel fit` command(s)."""
