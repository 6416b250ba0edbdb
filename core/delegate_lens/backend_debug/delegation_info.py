"""The reference's module path of the delegation info (see :mod:`delegate_lens.backend_debug`)."""

from __future__ import annotations

from delegate_lens.aot import (
    DelegationBreakdown,
    DelegationInfo,
    get_delegation_info,
    print_delegation_info,
)

__all__ = ["DelegationBreakdown", "DelegationInfo", "get_delegation_info", "print_delegation_info"]
