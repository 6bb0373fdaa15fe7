"""`acmemodel calibrate` command(s)."""
