"""The Inspector: ETDump + ETRecord -> tables linking runtime events to operators.

Importing this package never imports torch. See ``docs/inspector.md``.
"""

from __future__ import annotations

from delegate_lens._lazy import attach_stub

# every name is declared once, in __init__.pyi (the module each loads from on first use)
__getattr__, __dir__ = attach_stub(__name__, __file__)
