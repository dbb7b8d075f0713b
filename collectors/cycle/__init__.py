"""The collection stage's coordinator: one cycle of one cluster, sources to store.

It lives beside the adapters and the assembly it drives, not in the web app, so that a cycle
can be followed without leaving ``collectors/``; the database is reached only through the
small port in :mod:`collectors.cycle.store_port`, which the web app implements with the ORM.
"""
