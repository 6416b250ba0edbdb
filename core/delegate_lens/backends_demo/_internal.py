"""The internal face of the demo backend: what delegate-lens's other packages use of it and users
do not (``delegate_lens.backends_demo`` is the public face; docs/architecture.md, "Faces"). Each
name is declared once, in ``_internal.pyi``, and loads its module on first use."""

from __future__ import annotations

from delegate_lens._lazy import attach_stub

__getattr__, __dir__ = attach_stub(__name__, __file__)
