"""The accounting rules of docs/accounting.md (sections 2 to 9), as pure functions over views.

Nothing here knows about Kopf, HTTP, asyncio, clocks or logging: every input arrives as an argument.
"""
