"""Built-in plugins: delegate-lens's own behaviour, registered on the same hooks as any plugin."""
