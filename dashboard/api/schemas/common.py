"""Field types and envelopes every answer shares.

Times are ISO 8601 in UTC with a ``Z``, microseconds kept (``iso``); numbers stay numbers
(null when unknown, never a made-up 0). Objects are closed (``additionalProperties: false``
in the document) because the API writes exactly the declared keys, so Schemathesis can check
answers strictly; closing is declared in the JSON schema rather than with pydantic's
``extra="forbid"``, which would refuse the ORM objects the schemas read from.
"""

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Path, Schema
from pydantic import ConfigDict, Field, PlainSerializer, WithJsonSchema, create_model

from dashboard.api.pagination import MAX_PAGE_SIZE

TIME_SCHEMA = {"type": "string", "format": "date-time"}


def iso(at: datetime | None) -> str | None:
    """``2026-11-21T10:00:00.123456Z``: Django's JSON encoder would cut microseconds."""
    return None if at is None else at.isoformat().replace("+00:00", "Z")


# A datetime read from the database, written by ``iso``.
Time = Annotated[datetime, PlainSerializer(iso, return_type=str), WithJsonSchema(TIME_SCHEMA)]
# A time some other module already wrote as text (kept byte for byte), or a datetime.
TimeText = Annotated[
    str | datetime,
    PlainSerializer(lambda at: at if isinstance(at, str) else iso(at), return_type=str),
    WithJsonSchema(TIME_SCHEMA),
]
# int stays int and float stays float (pydantic's float would turn 3 into 3.0).
Number = Annotated[int | float, WithJsonSchema({"type": "number"})]
# JSON kept as the source wrote it.
AnyObject = Annotated[dict[str, Any], WithJsonSchema({"type": "object"})]
Counts = dict[str, int]
Uri = Annotated[str, WithJsonSchema({"type": "string", "format": "uri"})]
# ``{"<topic>": [partitions]}``, as members' assignments are published.
TopicPartitions = dict[str, list[int]]


def one_of(values: Any) -> Any:
    """A ``Literal`` of the values the code enforces (``Status.values``, ``FORMATS``...), so
    the document's enums are read from the same place as the checks."""
    return Literal[tuple(values)]  # type: ignore[valid-type]


class Closed(Schema):
    """An answer object: every key listed, no other (``additionalProperties: false``)."""

    model_config = ConfigDict(json_schema_extra={"additionalProperties": False})


class ErrorBody(Closed):
    message: str = Field(
        description="What is wrong; starts with the parameter or field at fault when there "
        "is one."
    )
    field: Annotated[
        str | None,
        WithJsonSchema({"type": "string", "description": "The parameter or body field at fault."}),
    ] = None


class Error(Closed):
    """The API's one error shape (``dashboard/api/errors.py``)."""

    model_config = ConfigDict(
        json_schema_extra={
            "additionalProperties": False,
            "example": {
                "error": {
                    "message": "status: 'BROKEN' is not one of UNKNOWN, OK, WARN, STALL, STOP, "
                    "REWIND, ERR",
                    "field": "status",
                }
            },
        }
    )
    error: ErrorBody


class PageFields(Closed):
    """The pagination envelope (``dashboard/api/pagination.py``)."""

    count: int = Field(ge=0)
    page: int = Field(ge=1)
    page_size: int = Field(ge=1, le=MAX_PAGE_SIZE)
    pages: int = Field(ge=1)
    next: Uri | None = Field(description="The next page, other parameters kept; null on the last.")
    previous: Uri | None


def page_of(item: Any, name: str, base: type[PageFields] = PageFields, **extra: Any) -> Any:
    """``{"count", "page", …, "results": [item]}`` named ``name`` in the document; ``extra``
    fields (``name=(type, default)``) go before ``results``, as the answer writes them."""
    return create_model(name, __base__=base, **extra, results=(list[item], ...))


def answers(ok: Any, *errors: int, status: int = 200) -> dict[int, Any]:
    """An operation's ``response=``: its answer, and the errors it documents (every one
    may answer 401), each in the error shape."""
    return {status: ok, **{code: Error for code in sorted({401, *errors})}}


def object_id(what: str) -> Any:
    """A path parameter naming an object by id. The route's int converter takes digits only
    (anything else is the API's 404), so the document says ``minimum: 0``."""
    return Annotated[int, Path(ge=0, description=f"{what} id.")]
