#!/usr/bin/env bash
# Installs DIR/requirements.txt into DIR/.venv (once; skipped while the pins
# are unchanged) and prints the venv's python on stdout. Used by `make test`
# and by the tests that run Python, e.g. the webhook receiver of internal/e2e:
#
#   scripts/python-venv.sh tests/webhooks    →  tests/webhooks/.venv/bin/python
#
# The same mechanism as scripts/sdk-test.sh's: a venv per directory, the sha256
# of its requirements file kept in the venv to tell when to reinstall.
set -euo pipefail

dir=${1:?usage: scripts/python-venv.sh DIR (with DIR/requirements.txt)}
case "$dir" in /*) ;; *) dir=$PWD/$dir ;; esac
req="$dir/requirements.txt"
venv="$dir/.venv"
[ -f "$req" ] || { echo "python-venv: no $req" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python-venv: python3 is required" >&2; exit 1; }
export PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1

stamp="$venv/.sovereign-requirements.sha256"
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "python-venv: installing $req into $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  printf '*\n' >"$venv/.gitignore" # the venv ignores itself, whatever the repo's .gitignore says
  "$venv/bin/python" -m pip install --quiet --no-input -r "$req" >&2
  printf '%s\n' "$want" >"$stamp"
fi
echo "$venv/bin/python"
