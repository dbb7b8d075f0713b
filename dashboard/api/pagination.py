"""Page-number pagination with links (``?page=``, ``?page_size=``, capped).

Pages rather than cursors: every list here is ordered on a stable key and small enough to
count, and a page number lets a user jump (the UI, a spreadsheet import). A page past the
end is a 400 naming ``page``, not an empty 200 that a loop would take for "done, nothing".
The rows are returned as they are: the page's schema (``schemas.common.page_of``) writes them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest

from dashboard.api import params

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500


def _link(request: HttpRequest, page: int) -> str:
    query = request.GET.copy()
    query["page"] = str(page)
    return request.build_absolute_uri(f"{request.path}?{query.urlencode()}")


def paginate(
    request: HttpRequest,
    rows: QuerySet | Sequence,
    page: int,
    size: int,
    extra: dict | None = None,
    prepare: Callable[[list], Any] | None = None,
) -> dict:
    """One page of ``rows`` (``page`` and ``size`` as the query schema read them);
    ``prepare`` sees the page's rows first (to read what they need for the whole page in one
    query)."""
    count = rows.count() if isinstance(rows, QuerySet) else len(rows)
    pages = max(1, -(-count // size))
    if page > pages:
        raise params.bad("page", f"page {page} is past the last page ({pages})")
    start = (page - 1) * size
    body = {
        "count": count,
        "page": page,
        "page_size": size,
        "pages": pages,
        "next": _link(request, page + 1) if page < pages else None,
        "previous": _link(request, page - 1) if page > 1 else None,
    }
    if extra:
        body.update(extra)
    rows_of_page = list(rows[start : start + size])
    if prepare is not None:
        prepare(rows_of_page)
    body["results"] = rows_of_page
    return body
