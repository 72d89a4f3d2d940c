"""dra-ledger: node-allocatable accounting for Kubernetes DRA (KEP-5517).

The pure core (quantities, views, accounting, state, ledgers) turns raw API bodies into one
NodeAllocatableLedger per node; the shell (cli, operator, writing, ...) feeds it and writes its results.
"""

__version__ = "0.1.0"
