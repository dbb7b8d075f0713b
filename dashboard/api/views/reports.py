"""``/api/v1/reports/``: lag reports. ``POST`` queues one (write scope; built by a Celery
task, progress in its document); ``GET …/<id>/download`` fetches the finished file;
``GET …/export?cluster=…&since=…&format=csv`` streams one right away (read scope: it
creates nothing)."""

from __future__ import annotations

import json

from django.http import FileResponse, HttpRequest, StreamingHttpResponse
from django.urls import reverse

from dashboard.accounts.roles import Action
from dashboard.api import params
from dashboard.api.auth import api_view
from dashboard.api.errors import ApiError, not_found
from dashboard.api.pagination import PAGE_PARAMS, paginate
from dashboard.api.responses import ApiJsonResponse
from dashboard.reports.models import CONTENT_TYPES, Report, ReportStatus
from dashboard.reports.service import create_report, stream_report
from dashboard.reports.spec import SpecError, parse_format, parse_spec

DEFAULT_FORMAT = "csv"


def report_dict(request: HttpRequest, report: Report) -> dict:
    body = report.progress_doc()
    body.update(
        {
            "format": report.fmt,
            "description": report.description,
            "requested_by": report.requested_by,
            "spec": report.spec,
            "started_at": report.started_at.isoformat() if report.started_at else None,
            "expired": report.expired,
            "url": request.build_absolute_uri(reverse("api:report", args=[report.pk])),
            "download_url": request.build_absolute_uri(
                reverse("api:report-download", args=[report.pk])
            )
            if body["downloadable"]
            else None,
        }
    )
    return body


def _spec_error(exc: SpecError) -> ApiError:
    return ApiError(400, str(exc), field=exc.field)


def _json_body(request: HttpRequest) -> dict:
    if not request.body:
        raise ApiError(400, "body: expected a JSON object of report fields", field="body")
    try:
        data = json.loads(request.body)
    except (ValueError, RecursionError) as exc:
        raise ApiError(400, f"body: not valid JSON ({exc})", field="body") from None
    if not isinstance(data, dict):
        raise ApiError(400, "body: expected a JSON object of report fields", field="body")
    return data


@api_view(["GET", "POST"], action=Action.BUILD_REPORT)
def report_list(request: HttpRequest) -> ApiJsonResponse:
    if request.method == "POST":
        return _create(request)
    params.check_known(request.GET, ("status", *PAGE_PARAMS))
    reports = Report.objects.order_by("-created_at", "-id")
    statuses = params.choices(request.GET, "status", tuple(ReportStatus.values))
    if statuses:
        reports = reports.filter(status__in=statuses)
    return ApiJsonResponse(paginate(request, reports, lambda r: report_dict(request, r)))


def _create(request: HttpRequest) -> ApiJsonResponse:
    data = _json_body(request)
    try:
        fmt = parse_format(data.get("format") or DEFAULT_FORMAT)
        spec = parse_spec(data)
    except SpecError as exc:
        raise _spec_error(exc) from None
    report = create_report(spec, fmt, request.api_actor)
    body = report_dict(request, report)
    response = ApiJsonResponse(body, status=202)
    response["Location"] = body["url"]
    return response


@api_view()
def report_detail(request: HttpRequest, report_id: int) -> ApiJsonResponse:
    params.check_known(request.GET, ())
    report = Report.objects.filter(pk=report_id).first()
    if report is None:
        raise not_found(f"report {report_id}")
    return ApiJsonResponse(report_dict(request, report))


@api_view()
def report_download(request: HttpRequest, report_id: int):
    report = Report.objects.filter(pk=report_id).first()
    if report is None:
        raise not_found(f"report {report_id}")
    if report.status != ReportStatus.DONE:
        raise ApiError(409, f"report {report_id} is {report.status} ({report.progress:.0%})")
    try:
        handle = report.open()
    except FileNotFoundError:
        raise ApiError(410, f"report {report_id}'s file is gone (expired)") from None
    return FileResponse(
        handle, as_attachment=True, filename=report.download_name, content_type=report.content_type
    )


@api_view()
def report_export(request: HttpRequest) -> StreamingHttpResponse:
    """The report's bytes as they are produced: nothing is stored, nothing queued."""
    try:
        fmt = parse_format(request.GET.get("format") or DEFAULT_FORMAT)
        spec = parse_spec(request.GET)
        chunks = stream_report(spec, fmt)
    except SpecError as exc:
        raise _spec_error(exc) from None
    response = StreamingHttpResponse(chunks, content_type=CONTENT_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="lag-report.{fmt}"'
    return response
