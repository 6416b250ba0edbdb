"""Built-in ``dl_delegate_mapping`` validator (filled in by the ahead-of-time work, issue 4)."""
