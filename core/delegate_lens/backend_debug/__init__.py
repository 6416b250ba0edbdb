"""``executorch.devtools.backend_debug`` under delegate-lens: how much of a lowered graph
went to delegates (defined in :mod:`delegate_lens.aot._delegation_info`; imports torch)."""

from __future__ import annotations

from delegate_lens.aot import (
    DelegationBreakdown,
    DelegationInfo,
    get_delegation_info,
    print_delegation_info,
)

__all__ = ["DelegationBreakdown", "DelegationInfo", "get_delegation_info", "print_delegation_info"]
