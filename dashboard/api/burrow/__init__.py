"""``/v3``: the Burrow-compatible subset (docs/API.md): ``shapes`` (Burrow's JSON, pure),
``data`` (the queries), ``views`` and ``urls``."""
