#!/usr/bin/env bash
# Lint, format check and type check: what CI runs besides the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m ruff check .
python -m ruff format --check .
# mypy checks the packages by their import names: delegate_lens from core/ (mypy_path in
# pyproject.toml) and each plugin's package from its src/.
packages=(-p delegate_lens)
search=()
for init in plugins/*/src/*/__init__.py; do
  package_dir=$(dirname "$init")
  packages+=(-p "$(basename "$package_dir")")
  search+=("$(dirname "$package_dir")")
done
MYPYPATH=$(IFS=:; echo "${search[*]}") python -m mypy "${packages[@]}"
