"""`acmemodel plan` command(s)."""
