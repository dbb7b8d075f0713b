"""What the Content-Security-Policy must allow for Plotly's JavaScript, read from the installed
file itself (settings/people.py; docs/SECURITY.md, "Content-Security-Policy").

plotly.js injects one stylesheet of its own at load, the CSS of maplibre (the library of its
map traces), as an inline ``<style>`` with fixed text. Rather than allow inline styles, the
policy allows that text by its SHA-256 hash, computed here from the installed bundle: a new
Plotly brings its new hash with it, and the browser test (tests/ui/test_people_browser.py)
fails if a Plotly release injects anything else. Pure, and without importing plotly (settings
are read by every process, which must not pay for it).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import re
from pathlib import Path

# `var e=document.createElement("style");e.id="<64 hex>",e.textContent='<css>'`
_MARK = b'createElement("style");'
_INJECTED = re.compile(
    rb'createElement\("style"\);\w+\.id="[0-9a-f]{64}",\w+\.textContent=\'([^\'\\]*)\''
)


def plotly_js() -> Path | None:
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "package_data" / "plotly.min.js"
    return path if path.exists() else None


def csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def injected_style_hashes(source: bytes | None = None) -> list[str]:
    """The CSP hash sources of the stylesheets the bundle injects with fixed text (its bytes
    searched as they are: decoding the whole bundle would cost each process ~0.1 s)."""
    if source is None:
        path = plotly_js()
        if path is None:
            return []
        source = path.read_bytes()
    hashes, at = [], source.find(_MARK)
    while at != -1:  # a plain search for the mark, then the pattern there (a regex search
        found = _INJECTED.match(source, at)  # over the whole 4.8 MB bundle takes seconds)
        if found:
            hashes.append(csp_hash(found.group(1).decode()))
        at = source.find(_MARK, at + 1)
    return hashes
