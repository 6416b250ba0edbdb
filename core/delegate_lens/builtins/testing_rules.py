"""Built-in plugin: the test kit's own rules (``lowers`` ... ``numeric-gaps``, defined in
:mod:`delegate_lens.testing`) on ``dl_testing_rules``, the hook through which a backend
author's plugin adds rules too. Imports the rules when the hook is called."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from delegate_lens.hookspecs import hookimpl

if TYPE_CHECKING:
    from delegate_lens.testing import Rule

__all__ = ["dl_testing_rules"]


@hookimpl
def dl_testing_rules() -> Sequence[Rule]:
    from delegate_lens.testing import BUILTIN_RULES

    return BUILTIN_RULES
