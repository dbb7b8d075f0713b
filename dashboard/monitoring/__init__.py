"""Monitoring app: the domain models, the store's database side, ingest, and the status runs
applied to the database (the pages that browse them are ``dashboard.ui``)."""
