#!/usr/bin/env bash
# Install Tokenforge into .venv and serve it with the embedded defaults:
# a SQLite file and a corpus store under ./instance, one background worker, http://127.0.0.1:8000.
#   bash scripts/run.sh [tokenforge serve arguments, e.g. --port 9000]
set -euo pipefail
cd "$(dirname "$0")/.."
if ! python3 -c "import ensurepip, venv" 2>/dev/null; then
    if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
    else sudo apt-get update -qq && sudo apt-get install -y -qq python3-venv >/dev/null; fi
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e .
exec .venv/bin/tokenforge serve "$@"
