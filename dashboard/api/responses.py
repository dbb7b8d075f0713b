"""JSON responses whose text is safe wherever it lands.

Names from the monitored systems are hostile (``</script>`` is a valid Kafka group id). The
response is ``application/json`` with ``nosniff``, so a browser never renders it as HTML;
still, ``<``, ``>`` and ``&`` are written as ``\\u003c``-style escapes (as Django's
``json_script`` does), so a page or tool that pastes the text into HTML cannot be tricked.
The JSON value is unchanged. ``ApiJsonResponse`` is for answers built outside ninja (errors,
this document); ``SafeJSONRenderer`` writes ninja's answers the same way.
"""

from __future__ import annotations

from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.http import JsonResponse
from ninja.renderers import JSONRenderer

_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026"}


class SafeJSONEncoder(DjangoJSONEncoder):
    def encode(self, o: Any) -> str:
        return super().encode(o).translate(_ESCAPES)


class ApiJsonResponse(JsonResponse):
    def __init__(self, data: Any, status: int = 200, **kwargs: Any) -> None:
        kwargs.setdefault("safe", False)
        super().__init__(data, encoder=SafeJSONEncoder, status=status, **kwargs)
        self["X-Content-Type-Options"] = "nosniff"


class SafeJSONRenderer(JSONRenderer):
    """ninja's renderer with the escapes above (the schemas have already written times as
    text, so the encoder's own date format is never used)."""

    encoder_class = SafeJSONEncoder
