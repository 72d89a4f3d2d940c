"""The accounting rules of the ledger contract, section 1, as pure functions over views.

Nothing here knows about Kopf, HTTP, asyncio, clocks or logging: every input arrives as an argument.
"""
