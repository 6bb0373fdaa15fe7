"""`acmemodel forecast` command(s)."""
