"""delegate-lens plugin: JSON (and MessagePack) metadata of delegate events.

Found by delegate-lens through its entry point ``json_metadata`` (group ``delegate_lens``);
the hooks live in :mod:`delegate_lens_json_metadata.plugin`, the codec in
:mod:`delegate_lens_json_metadata.codec`.
"""

from __future__ import annotations

from delegate_lens_json_metadata.codec import FORMATS, decode, encode

__all__ = ["FORMATS", "decode", "encode"]
__version__ = "0.1.0"
