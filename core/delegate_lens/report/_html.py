"""One self-contained HTML file: the page template, its style and script, the vendored
graph libraries (Cytoscape.js, dagre, cytoscape-dagre) and the report data, all inlined.

No name from a file can change how the page parses: the data is JSON in a
``<script type="application/json">`` element with ``<``, ``>``, ``&``, U+2028, U+2029 and
lone surrogates written as ``\\uXXXX`` escapes (so nothing in it can end the element, open
an HTML comment or a script inside it, or end a JavaScript string), and the page's script
puts every name into the page as text (``textContent``), never as HTML. The one name the
server writes into the HTML, the title, is escaped (:func:`html_text`). The template's slots
are filled in one pass, so a name holding ``{{DATA}}`` stays text.
"""

from __future__ import annotations

import html
import json
import re
from functools import cache
from importlib import resources
from typing import Any

VENDOR_SCRIPTS = ("cytoscape.min.js", "dagre.min.js", "cytoscape-dagre.js")

_UNSAFE_IN_SCRIPT = re.compile("[<>&\u2028\u2029\ud800-\udfff]")
"""What JSON may hold as it is but an HTML ``<script>`` element or JavaScript may not."""
_SURROGATE = re.compile("[\ud800-\udfff]")
_SLOT = re.compile(r"\{\{(TITLE|STYLE|VENDOR|DATA|SCRIPT)\}\}")


@cache
def _asset(folder: str, name: str) -> str:
    return resources.files("delegate_lens.report").joinpath(folder, name).read_text("utf-8")


def _script_safe(text: str) -> str:
    """Script text (ours, or a vendored library's) that cannot end its ``<script>`` early."""
    return text.replace("</", "<\\/")


def json_for_script(data: object) -> str:
    """``data`` as compact JSON that is inert inside any HTML element: the characters of
    :data:`_UNSAFE_IN_SCRIPT` (only ever inside JSON strings) as ``\\uXXXX`` escapes."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return _UNSAFE_IN_SCRIPT.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def html_text(text: str) -> str:
    """``text`` for HTML text or a quoted attribute value: escaped, a lone surrogate (a name
    that was not UTF-8) as U+FFFD."""
    return html.escape(_SURROGATE.sub("\ufffd", text))


def render_html(data: dict[str, Any]) -> str:
    """The report page holding ``data`` (see :func:`build_report_data`)."""
    vendor = "\n".join(
        f"<script>/* {name} */\n{_script_safe(_asset('vendor', name))}\n</script>"
        for name in VENDOR_SCRIPTS
    )
    slots = {
        "TITLE": html_text(str(data["meta"]["title"])),
        "STYLE": _asset("assets", "report.css"),
        "VENDOR": vendor,
        "DATA": json_for_script(data),
        "SCRIPT": _script_safe(_asset("assets", "report.js")),
    }
    return _SLOT.sub(lambda m: slots[m.group(1)], _asset("assets", "template.html"))
