"""The API's views, one module per resource; each is thin: read parameters, query, serialize."""
