"""The asyncio (uvloop) server: listener, connections, dispatch. The only awaiting layer."""
