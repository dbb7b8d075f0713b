"""The hashes the Content-Security-Policy allows for Plotly's injected stylesheet
(dashboard/ui/plotly_csp.py), case by case, and for the installed bundle."""

from __future__ import annotations

import base64
import hashlib

import pytest

from dashboard.ui.plotly_csp import csp_hash, injected_style_hashes

ID = "9f215cf04c5486422605d13261cb87401f4e7763b6296af81e98efbc0130da53"


def sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            f'var e=document.createElement("style");e.id="{ID}",e.textContent=\'.a{{b:c}}\'',
            [".a{b:c}"],
        ),
        (f'x.createElement("style");e.id="{ID}",e.textContent=\'\';y', [""]),
        ('document.createElement("style"),n.setAttribute("id",i)', []),  # plotly's empty one
        (f'document.createElement("style");e.id="{ID}",e.textContent=\'a\\\'b\'', []),  # escaped
        ('document.createElement("style");e.id="short",e.textContent=\'.a{}\'', []),
        ("no styles here", []),
        (
            f'createElement("style");a.id="{ID}",a.textContent=\'.x{{}}\';'
            f'createElement("style");b.id="{ID}",b.textContent=\'.y{{}}\'',
            [".x{}", ".y{}"],
        ),
    ],
)
def test_injected_style_hashes(source: str, expected: list[str]) -> None:
    assert injected_style_hashes(source.encode()) == [sha(css) for css in expected]


def test_csp_hash_of_the_empty_text() -> None:
    assert csp_hash("") == "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"


def test_the_installed_bundle_injects_one_stylesheet_with_text() -> None:
    assert len(injected_style_hashes()) == 1
