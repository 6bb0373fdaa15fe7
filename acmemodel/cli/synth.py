"""`acmemodel synth` command(s)."""
