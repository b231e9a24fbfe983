#!/usr/bin/env bash
# The whole test suite. Uses DATABASE_URL when set; otherwise the local PostgreSQL when it answers,
# else SQLite (the PostgreSQL-only tests then say why they are skipped).
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -z "${DATABASE_URL:-}" ]; then
  if .venv/bin/python -c "import psycopg; psycopg.connect('postgresql://postgres@127.0.0.1:5432/postgres', connect_timeout=2).close()" 2>/dev/null; then
    export DATABASE_URL="postgresql://postgres@127.0.0.1:5432/waypoint"
  fi
fi
if [ -n "${DATABASE_URL:-}" ]; then
  echo "Tests run on: ${DATABASE_URL%%://*} (${DATABASE_URL#*@})"
else
  echo "Tests run on: SQLite (set DATABASE_URL or start PostgreSQL on 127.0.0.1:5432 for the PostgreSQL-only tests)"
fi
echo "Channel layer for multi-process tests: ${REDIS_URL:-redis://127.0.0.1:6379/0 (default)}"
.venv/bin/python -m pytest "$@"
status=$?
# pytest's "no tests collected" (5) would hide a broken suite behind a green run.
exit $status
