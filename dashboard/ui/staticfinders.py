"""Serves Plotly's JavaScript from the installed ``plotly`` package's own file.

The deployment may have no internet (SPEC §8), so no CDN; and a vendored copy would be 4.8 MB
in the repository that drifts from the Python package building the figures. This finder makes
``lagwatch/vendor/plotly.min.js`` resolve to ``plotly/package_data/plotly.min.js``: the
development server and WhiteNoise find it like any static file, and ``collectstatic`` copies
it (compressed) for production.
"""

from __future__ import annotations

from pathlib import Path

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

PLOTLY_JS = "plotly.min.js"
PREFIX = "lagwatch/vendor"
STATIC_PATH = f"{PREFIX}/{PLOTLY_JS}"


def plotly_js_path() -> Path:
    return Path(plotly.__file__).parent / "package_data" / PLOTLY_JS


class PlotlyFinder(BaseFinder):
    def __init__(self, *args: object, **kwargs: object) -> None:
        self.storage = FileSystemStorage(location=str(plotly_js_path().parent))
        # collectstatic and WhiteNoise put a storage's files under its ``prefix``.
        self.storage.prefix = PREFIX

    def check(self, **kwargs: object) -> list:
        return []

    def find(self, path: str, find_all: bool = False, **kwargs: object):
        if path != STATIC_PATH:
            return [] if find_all else None
        found = str(plotly_js_path())
        return [found] if find_all else found

    def list(self, ignore_patterns):
        yield PLOTLY_JS, self.storage
