"""Ingest: the token-authenticated endpoint clients push reports to (docs/INGEST.md).

``views.py`` parses a report (``collectors/ingest_parsing.py``) and ``store.py`` keeps it;
the next collection cycle reads it back through ``store.recent_reports``.
"""
