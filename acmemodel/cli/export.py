"""`acmemodel export` command(s)."""
