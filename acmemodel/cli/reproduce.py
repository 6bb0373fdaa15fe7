"""`acmemodel reproduce` command(s)."""
