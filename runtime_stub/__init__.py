"""The simulated runtime: programs, methods, EventTracer and ETDumpGen."""
