"""``/api/v1/reports/``: lag reports. ``POST`` queues one (operate or write scope; built by a
Celery task, progress in its document); ``GET …/<id>/download`` fetches the finished file;
``GET …/export?cluster=…&since=…&format=csv`` streams one right away (read scope: it
creates nothing).

The body of a ``POST`` and the export's query string are read by the report spec parser
(``dashboard/reports/spec.py``), as the pages' form is, so all three refuse a field with the
same words; their schemas (``ReportRequest``, ``ExportQuery``) document them."""

from __future__ import annotations

import json

from django.http import FileResponse, HttpRequest, HttpResponse, StreamingHttpResponse
from django.urls import reverse
from ninja import Query, Router, Status

from dashboard.accounts.roles import Action
from dashboard.api import params
from dashboard.api.auth import writers
from dashboard.api.errors import ApiError, not_found
from dashboard.api.pagination import paginate
from dashboard.api.schemas.activity import Report, ReportPage, ReportRequest
from dashboard.api.schemas.common import answers, object_id
from dashboard.api.schemas.groups import StatusName
from dashboard.api.schemas.query import ExportQuery, ReportQuery
from dashboard.reports.models import CONTENT_TYPES, ReportStatus
from dashboard.reports.models import Report as ReportRow
from dashboard.reports.service import create_report, stream_report
from dashboard.reports.spec import FORMATS, SpecError, parse_format, parse_spec

router = Router(tags=["reports"])
ReportId = object_id("Report")
DEFAULT_FORMAT = "csv"
JSON = "application/json"


def _report_file() -> dict:
    """The document's answer for a report's bytes: one content type per format; a JSON
    report is one array of row objects, columns in order (docs/REPORTS.md)."""
    row = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "time": {"type": "string", "format": "date-time"}, "cluster": {"type": "string"},
            "source": {"type": "string"}, "group": {"type": "string"},
            "topic": {"type": "string"}, "partition": {"type": "integer"},
            "committed": {"type": ["integer", "null"]}, "latest": {"type": ["integer", "null"]},
            "lag": {"type": ["integer", "null"]}, "time_lag_s": {"type": ["number", "null"]},
            "status": {"type": "string", "enum": list(StatusName.__args__)},
        },
    }  # fmt: skip
    row["required"] = list(row["properties"])
    binary = {"schema": {"type": "string", "contentMediaType": "application/octet-stream"}}
    content = {
        CONTENT_TYPES[fmt].split(";")[0]: (
            {"schema": {"type": "array", "items": row}} if fmt == "json" else binary
        )
        for fmt in FORMATS
    }
    return {
        "description": "The report's bytes (Content-Disposition: attachment), in its format.",
        "content": content,
    }


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


@router.get("/", response=answers(ReportPage, 400), url_name="reports",
            operation_id="listReports", summary="Lag reports, newest first")  # fmt: skip
def report_list(request: HttpRequest, query: Query[ReportQuery]) -> dict:
    reports = ReportRow.objects.order_by("-created_at", "-id")
    if query.status:
        reports = reports.filter(status__in=query.status)
    return paginate(request, reports, query.page, query.page_size)


@router.post(
    "/", response=answers(Report, 400, 403, status=202), auth=writers(Action.BUILD_REPORT),
    operation_id="createReport", summary="Queue a lag report (operate or write scope)",
    description="Built by a Celery task; follow Location (the report) until it is done, then "
    "its download_url. A bad field is a 400 naming it and nothing is queued.",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {JSON: {"schema": ReportRequest.model_json_schema()}},
        },
        "responses": {202: {
            "description": "Queued.",
            "headers": {"Location": {"schema": {"type": "string", "format": "uri"},
                                     "description": "The report."}},
        }},
    },
)  # fmt: skip
def report_create(request: HttpRequest, response: HttpResponse) -> Status:
    data = _json_body(request)
    try:
        fmt = parse_format(data.get("format") or DEFAULT_FORMAT)
        spec = parse_spec(data)
    except SpecError as exc:
        raise _spec_error(exc) from None
    report = create_report(spec, fmt, request.api_actor)
    response["Location"] = request.build_absolute_uri(reverse("api:report", args=[report.pk]))
    return Status(202, report)


@router.get(
    "/export", response=answers(None, 400), url_name="report-export",
    operation_id="exportReport",
    summary="A report streamed as it is produced (nothing stored or queued)",
    openapi_extra={"responses": {200: _report_file()}},
)  # fmt: skip
def report_export(request: HttpRequest, query: Query[ExportQuery]) -> StreamingHttpResponse:
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


@router.get("/{int:report_id}/", response=answers(Report, 400, 404), url_name="report",
            operation_id="getReport",
            summary="One report: status, progress, download_url once done")  # fmt: skip
def report_detail(request: HttpRequest, report_id: ReportId) -> ReportRow:
    params.check_known(request.GET, ())
    report = ReportRow.objects.filter(pk=report_id).first()
    if report is None:
        raise not_found(f"report {report_id}")
    return report


@router.get(
    "/{int:report_id}/download", response=answers(None, 404, 409, 410),
    url_name="report-download", operation_id="downloadReport",
    summary="A finished report's file",
    description="409 while queued or running; 410 once its file has expired.",
    openapi_extra={"responses": {200: _report_file()}},
)  # fmt: skip
def report_download(request: HttpRequest, report_id: ReportId) -> FileResponse:
    report = ReportRow.objects.filter(pk=report_id).first()
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
