"""One self-contained HTML file: the page template, its style and script, the vendored
graph libraries (Cytoscape.js, dagre, cytoscape-dagre) and the report data, all inlined."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

VENDOR_SCRIPTS = ("cytoscape.min.js", "dagre.min.js", "cytoscape-dagre.js")


@cache
def _asset(folder: str, name: str) -> str:
    return resources.files("delegate_lens.report").joinpath(folder, name).read_text("utf-8")


def _script_safe(text: str) -> str:
    """Text that cannot end its ``<script>`` element early."""
    return text.replace("</", "<\\/")


def render_html(data: dict[str, Any]) -> str:
    """The report page holding ``data`` (see :func:`build_report_data`)."""
    payload = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    vendor = "\n".join(
        f"<script>/* {name} */\n{_script_safe(_asset('vendor', name))}\n</script>"
        for name in VENDOR_SCRIPTS
    )
    title = str(data["meta"]["title"]).replace("&", "&amp;").replace("<", "&lt;")
    return (
        _asset("assets", "template.html")
        .replace("{{TITLE}}", title)
        .replace("{{STYLE}}", _asset("assets", "report.css"))
        .replace("{{VENDOR}}", vendor)
        .replace("{{DATA}}", _script_safe(payload))
        .replace("{{SCRIPT}}", _script_safe(_asset("assets", "report.js")))
    )
