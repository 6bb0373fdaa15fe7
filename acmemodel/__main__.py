from acmemodel.cli import main

main()
