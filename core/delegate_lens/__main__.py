"""``python -m delegate_lens`` runs the command line."""

from delegate_lens.cli import main

raise SystemExit(main())
