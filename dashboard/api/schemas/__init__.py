"""The API's typed answers and parameters (django-ninja ``Schema``s, i.e. pydantic models).

One set of classes is at once the serializer (each answer is validated and dumped through its
schema), the validator of the query string (``query``) and the source of the OpenAPI
document (``dashboard/api/openapi.py``), so the three cannot drift apart:

- ``common``: shared field types (times, numbers, enums read from the code) and the error
  and page envelopes;
- ``groups``: groups and partitions (list and detail);
- ``monitoring``: clusters, statuses and their changes, rebalances, history;
- ``documents``: documents built elsewhere (assignment what-if, spouts, producers, brokers);
- ``activity``: alerts and reports;
- ``query``: the query-string parameters of each endpoint.
"""
