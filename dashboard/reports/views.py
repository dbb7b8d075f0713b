"""Report pages: the form and list, a small progress endpoint, downloads. Thin: parsing is in
:mod:`spec`, building in :mod:`service`/:mod:`build`. Login is required by the middleware."""

from __future__ import annotations

from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    JsonResponse,
    StreamingHttpResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from dashboard.accounts.access import forbidden, may
from dashboard.accounts.roles import Action
from dashboard.monitoring.models import Cluster
from dashboard.reports.models import CONTENT_TYPES, Report
from dashboard.reports.service import create_report, stream_report
from dashboard.reports.spec import FORMATS, SpecError, parse_format, parse_spec

LIST_SIZE = 50
RESOLUTIONS = ("raw", "1m", "5m", "15m", "1h", "6h", "1d")
FORM_FIELDS = ("cluster", "groups", "topics", "since", "start", "end", "resolution", "format")


@require_http_methods(["GET", "POST"])
def index(request: HttpRequest) -> HttpResponse:
    """GET: the form and the list. POST ``action=build`` queues a report (the list shows its
    progress; an operator's), ``action=download`` streams it straight back (for small reports;
    it stores nothing, so any role may, as the API's export)."""
    form = {"since": "24h", "resolution": "1m", "format": "csv"}
    error = None
    status = 200
    if request.method == "POST":
        if request.POST.get("action") != "download" and not may(request, Action.BUILD_REPORT):
            return forbidden(request, Action.BUILD_REPORT)
        form = {k: request.POST.get(k, "") for k in FORM_FIELDS}
        data = {k: v for k, v in form.items() if v.strip() and k != "format"}
        try:
            spec = parse_spec(data)
            fmt = parse_format(form["format"] or "csv")
            if not Cluster.objects.filter(name=spec.cluster).exists():
                raise SpecError("cluster", f"no cluster named {spec.cluster!r}")
        except SpecError as exc:
            error, status = exc, 400
        else:
            if request.POST.get("action") == "download":
                return _stream_response(spec, fmt)
            create_report(spec, fmt, request.user.get_username())
            return redirect("reports:index")
    context = {
        "form": form,
        "error": error,
        "clusters": list(Cluster.objects.order_by("name").values_list("name", flat=True)),
        "formats": FORMATS,
        "resolutions": RESOLUTIONS,
        "reports": Report.objects.all()[:LIST_SIZE],
    }
    return render(request, "reports/index.html", context, status=status)


@require_GET
def progress(request: HttpRequest) -> JsonResponse:
    """The recent reports' progress, for the list's polling (``?ids=1,2`` to narrow)."""
    query = Report.objects.all()
    ids = [part for part in request.GET.get("ids", "").split(",") if part.strip()]
    if ids:
        if not all(part.strip().isdigit() for part in ids):
            return JsonResponse({"error": "ids: expected comma-separated numbers"}, status=400)
        query = query.filter(pk__in=[int(part) for part in ids])
    return JsonResponse({"reports": [r.progress_doc() for r in query[:LIST_SIZE]]})


@require_GET
def download(request: HttpRequest, report_id: int) -> FileResponse:
    report = get_object_or_404(Report, pk=report_id)
    try:
        handle = report.open()
    except FileNotFoundError:
        raise Http404("this report has no file (not finished, failed or expired)") from None
    return FileResponse(
        handle, as_attachment=True, filename=report.download_name, content_type=report.content_type
    )


def _stream_response(spec, fmt: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(stream_report(spec, fmt), content_type=CONTENT_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="lag-report.{fmt}"'
    return response
