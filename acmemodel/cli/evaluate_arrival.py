"""`acmemodel evaluate_arrival` command(s)."""
