"""delegate-lens: follow delegate backend events back to the operators they came from.

Importing this package is cheap and never imports torch: public names are resolved on
first use through module ``__getattr__``. They are declared once, in ``__init__.pyi``
(what type checkers read; ``delegate_lens._lazy``).
"""

from __future__ import annotations

from delegate_lens import errors as errors  # loaded with the package, as before: cheap
from delegate_lens._lazy import attach_stub

__version__ = "0.1.0"

__getattr__, __dir__ = attach_stub(__name__, __file__)
