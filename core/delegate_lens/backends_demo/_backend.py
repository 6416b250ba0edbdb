"""The demo backend's id: what its hooks answer for (every other backend gets ``None``)."""

from __future__ import annotations

BACKEND_ID = "DemoBackend"
