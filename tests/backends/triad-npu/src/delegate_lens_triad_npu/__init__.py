"""TriadNPU: a test backend for delegate-lens's test kit (see README.md)."""

BACKEND = "TriadNPU"
