"""Data shipped in the package: a sample trace and the published AcmeTrace reference tables."""
