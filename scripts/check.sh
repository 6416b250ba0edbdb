#!/usr/bin/env bash
# Lint, format check and type check: what CI runs besides the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m ruff check .
python -m ruff format --check .
python scripts/typecheck.py
