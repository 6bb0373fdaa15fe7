"""``python -m acmemodel``: the command-line interface (same as the ``acmemodel`` command)."""
from acmemodel.cli import main

main()
