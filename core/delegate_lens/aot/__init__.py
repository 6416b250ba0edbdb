"""Ahead-of-time stage: debug handles, lowering through backend plugins, program, ETRecord.

Modules here import torch; importing this face does not: each name loads its module on
first use (``import delegate_lens`` reaches them only so).
"""

from __future__ import annotations

from delegate_lens._lazy import attach_stub

# every name is declared once, in __init__.pyi (the module each loads from on first use)
__getattr__, __dir__ = attach_stub(__name__, __file__)
