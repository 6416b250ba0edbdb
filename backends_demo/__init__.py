"""The reference demo backend (DemoBackend), registered by entry point like any plugin."""
