"""`acmemodel checkpoint` command(s)."""
