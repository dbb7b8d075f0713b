"""Plotly's JavaScript comes from the installed plotly package, never a CDN."""

import pytest
from django.contrib.staticfiles import finders
from django.test import Client
from django.urls import reverse

from dashboard.ui.staticfinders import STATIC_PATH, PlotlyFinder, plotly_js_path
from tests.ui import world

pytestmark = pytest.mark.django_db


def test_static_path_resolves_to_the_package_file() -> None:
    found = finders.find(STATIC_PATH)
    assert found == str(plotly_js_path())
    with open(found, "rb") as f:
        assert b"plotly" in f.read(2000).lower()


def test_collectstatic_lists_only_the_bundle() -> None:
    listed = list(PlotlyFinder().list(None))
    assert [(path, storage.prefix) for path, storage in listed] == [
        ("plotly.min.js", "lagwatch/vendor")
    ]
    assert PlotlyFinder().find("lagwatch/vendor/other.js") is None


def test_chart_pages_load_the_local_bundle_and_no_cdn(web: Client) -> None:
    world.partitions(world.group(world.cluster(), "g"), 1)
    body = web.get(reverse("ui:overview")).content.decode()
    assert '<script src="/static/lagwatch/vendor/plotly.min.js">' in body
    assert "cdn" not in body.lower()
    jobs = web.get(reverse("ui:jobs")).content.decode()
    assert "plotly.min.js" not in jobs  # pages without figures do not pay 4.8 MB
    assert "/static/lagwatch/live.js" in jobs
