"""
The servers that tests, e2e and the bench start on this machine (a Daphne process on a database of
its own, a PostgreSQL cluster, an ASGI app in a thread): development tools, not part of the product.
"""
