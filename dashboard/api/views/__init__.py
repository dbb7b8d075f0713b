"""The API's routers, one module per resource; each operation is thin: its query schema reads
the parameters, it queries, its answer schema writes the answer."""
