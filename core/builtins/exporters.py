"""Built-in Inspector exporters on ``dl_exporters`` (filled in by the Inspector work, issue 6)."""
