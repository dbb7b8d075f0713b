"""Read-only queries of the dashboard pages: plain dicts and lists out, a fixed number of
queries per page whatever the number of groups or partitions (no N+1)."""
