"""The ETDump codec: read and write ExecuTorch ETDump files (FlatBuffers, identifier ED00).

``loads``/``load`` decode a buffer in bulk with numpy into an :class:`ETDump` whose runs
hold their events as columns (:class:`EventColumns`); ``dumps``/``dump`` write the
columns back vectorized. See ``docs/etdump.md``.
"""

from __future__ import annotations

from delegate_lens._lazy import attach_stub

# every name is declared once, in __init__.pyi (the module each loads from on first use)
__getattr__, __dir__ = attach_stub(__name__, __file__)


def compiled_walk_available() -> bool:
    """Whether decoding takes the compiled walk: built, and not switched off by
    ``DELEGATE_LENS_NO_COMPILED``, which is read once per process (docs/etdump.md, "The
    compiled walk")."""
    from delegate_lens.etdump._fastwalk import COMPILED

    return COMPILED
