"""`python -m draledger`: the same command line as the `draledger` script."""

from draledger.commands.cli import main

if __name__ == "__main__":
    main()
