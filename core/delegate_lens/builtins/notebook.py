"""Built-in plugin: how an Inspector, a numeric-gap table and a comparison show in Jupyter.

Their ``_repr_html_`` asks the ``dl_html_display`` hook, so the value classes stay below the
report in the layers (they do not import it); this plugin answers with the report's
notebook pages (``compare_html`` and friends of :mod:`delegate_lens.report`), imported when
a display is asked for.
"""

from __future__ import annotations

from delegate_lens.hookspecs import hookimpl

__all__ = ["dl_html_display"]


@hookimpl(trylast=True)
def dl_html_display(obj: object) -> str | None:
    """The report's page for an Inspector, a numeric-gap table or a comparison."""
    from delegate_lens.compare import CompareResult
    from delegate_lens.inspector import Inspector
    from delegate_lens.numerics import NumericGapTable
    from delegate_lens.report import compare_html, gap_html, inspector_html

    if isinstance(obj, Inspector):
        return inspector_html(obj)
    if isinstance(obj, NumericGapTable):
        return gap_html(obj)
    if isinstance(obj, CompareResult):
        return compare_html(obj)
    return None
