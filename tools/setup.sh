#!/usr/bin/env bash
# Build .venv with the pinned requirements, install the project into it (editable) and build and
# register the ROS 2 packages. Idempotent: each step is skipped when its inputs are unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null || PYTHON=python3

if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV with $($PYTHON --version)"
  "$PYTHON" -m venv "$VENV"
fi

stamp="$VENV/.hgpo-requirements"
digest=$(cat requirements.txt requirements-nodeps.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$digest" ]; then
  echo "setup: installing pinned requirements (a few minutes on a fresh machine)"
  # The machine's pip config lists local mirrors that may be absent: drop those warnings only.
  pip_quiet() {
    if ! "$VENV/bin/python" -m pip "$@" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }; then
      echo "setup: \`pip $*\` failed (see above): fix its cause (disk space, network) and run \`make setup\` again" >&2
      exit 1
    fi
  }
  pip_quiet install -q -r requirements.txt
  pip_quiet install -q --no-deps -r requirements-nodeps.txt
  pip_quiet install -q --no-deps --no-build-isolation -e .
  # pip check, except for the unmet (and unwanted) dependencies of the packages installed without them
  nodeps=$(grep -oE '^[A-Za-z0-9_.-]+' requirements-nodeps.txt | paste -sd'|')
  problems=$("$VENV/bin/python" -m pip check 2>&1 | grep -vE "^($nodeps) " | grep -v "No broken requirements" || true)
  if [ -n "$problems" ]; then echo "$problems" >&2; exit 1; fi
  echo "$digest" > "$stamp"
else
  echo "setup: requirements up to date"
fi

"$VENV/bin/python" tools/build_ros_workspace.py
"$VENV/bin/python" tools/convert_model.py
