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
# A test database of this run's own, so two runs on one PostgreSQL never destroy each other's.
export WAYPOINT_TEST_DATABASE="${WAYPOINT_TEST_DATABASE:-test_waypoint_$$_${RANDOM}}"
# The suite starts a few hundred Python processes (servers, manage.py): with the project's own
# bytecode compiled first they start in half the time where PYTHONDONTWRITEBYTECODE is set.
.venv/bin/python -m compileall -q -j 0 apps config tests e2e bench devservers >/dev/null || true
.venv/bin/python -m pytest "$@"
status=$?
if [ -n "${DATABASE_URL:-}" ] && [[ "$DATABASE_URL" == postgres* ]]; then
  # pytest-django drops it too, unless a server process still held a connection at the end.
  .venv/bin/python - "$DATABASE_URL" "$WAYPOINT_TEST_DATABASE" <<'PY' || true
import sys

import psycopg

url, name = sys.argv[1], sys.argv[2]
with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True, connect_timeout=5) as conn:
    # With it go what start with its name: a parallel run's per-worker databases and the migrated
    # templates of the server databases (devservers/processes.py), if pytest could not drop them.
    found = conn.execute("SELECT datname FROM pg_database WHERE starts_with(datname, %s)", [name]).fetchall()
    for (database,) in found:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
PY
fi
# pytest's "no tests collected" (5) would hide a broken suite behind a green run.
exit $status
