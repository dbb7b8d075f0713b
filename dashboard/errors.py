"""What a request gets when the database does not answer: 503 with what is wrong, not 500.

A PostgreSQL restart, failover or network cut makes every page fail (the session and the user
are read from the database before any view runs), and Django's default answer is an anonymous
500, which reads as a bug in Lagwatch and asks nobody to retry. The handler tells the user and
their load balancer what happened: 503 with ``Retry-After``, a page (or, under ``/api/`` and
``/v3/``, a JSON error) saying the database does not answer and that the figures come back with
it. It renders without the database (no context processors, no session, no user): anything
else still gets Django's own 500.
"""

from __future__ import annotations

import sys

from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader
from django.views.defaults import server_error

RETRY_AFTER_S = 10
MESSAGE = (
    "Lagwatch's database does not answer. The pages and the API come back when it does; "
    "collection resumes on its own, and the health check (/health/) says when."
)
JSON_PREFIXES = ("/api/", "/v3/", "/metrics")

# The errors a database that is down, restarting or cut off raises (psycopg and sqlite alike):
# a broken or refused connection, not a query the code got wrong.
UNAVAILABLE = (OperationalError, InterfaceError)


def database_unavailable(exc: BaseException | None) -> bool:
    """Is ``exc`` (or what caused it) the database not answering?"""
    while exc is not None:
        if isinstance(exc, UNAVAILABLE):
            return True
        if isinstance(exc, DatabaseError):
            return False
        exc = exc.__cause__ or exc.__context__
    return False


def server_error_or_unavailable(request: HttpRequest, *args: object) -> HttpResponse:
    """``handler500``: 503 when the database is what failed, Django's 500 otherwise."""
    if not database_unavailable(sys.exc_info()[1]):
        return server_error(request)
    if request.path.startswith(JSON_PREFIXES):
        response: HttpResponse = JsonResponse(
            {"error": "database_unavailable", "detail": MESSAGE}, status=503
        )
    else:
        body = loader.get_template("503_database.html").render({"message": MESSAGE})
        response = HttpResponse(body, status=503)
    response["Retry-After"] = str(RETRY_AFTER_S)
    return response
