"""`acmemodel describe` command(s)."""
