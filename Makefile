# Waypoint: `make run` serves the product on http://127.0.0.1:8000, `make test` runs every test.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
E2E_TOOLS := e2e/node_modules/.package-lock.json
export UV_PYTHON_DOWNLOADS := never

# Django 6.1 needs Python >= 3.12: take the newest suitable interpreter on PATH or under pyenv.
PYTHON_312 := $(shell for c in python3.14 python3.13 python3.12 $$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -rV) python3; do \
	if command -v $$c >/dev/null 2>&1 && $$c -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then command -v $$c; break; fi; done)

.PHONY: run superuser test install lint bench soak

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@if [ -z "$(PYTHON_312)" ]; then echo "Waypoint needs Python >= 3.12 (Django 6.1) and none was found on PATH or under pyenv. Install one (for example 'pyenv install 3.12' or 'uv python install 3.12') and run this again." >&2; exit 1; fi
	@echo "Using $(PYTHON_312)"
	@test -x $(PY) || $(PYTHON_312) -m venv $(VENV)
	@$(VENV)/bin/pip install -q --disable-pip-version-check uv
	@# Bytecode compiled once: where PYTHONDONTWRITEBYTECODE is set, every process (each test server,
	@# each manage.py) would otherwise compile every module it imports, seconds per start.
	$(VENV)/bin/uv pip install -q --compile-bytecode --python $(PY) -e '.[dev]'
	@touch $@

# PORT, SHOP_PORT and MCP_PORT move the server, the demo shop and its MCP server (make run PORT=8100 SHOP_PORT=8101 MCP_PORT=8102).
PORT ?= 8000
SHOP_PORT ?= 8001
MCP_PORT ?= 8002
URL := http://127.0.0.1:$(PORT)

run: install
	@DEBUG=1 $(PY) manage.py migrate --noinput --verbosity 0
	@# The demo shop's MCP server comes first: the demo assistant's MCP tools are listed from it. The demo
	@# shop embeds the widget from another origin; all three stop together. The addresses to open are
	@# printed last, once each answers, so their start-up lines don't bury them.
	@DEBUG=1 $(PY) manage.py demo_mcp --port $(MCP_PORT) & mcp=$$!; \
	trap 'kill $$mcp $$shop $$server 2>/dev/null' EXIT; \
	until (exec 3<>/dev/tcp/127.0.0.1/$(MCP_PORT)) 2>/dev/null; do kill -0 $$mcp 2>/dev/null || exit 1; sleep 0.2; done; \
	DEBUG=1 WAYPOINT_TOOL_SOURCES_ALLOW_PRIVATE=1 $(PY) manage.py load_demo --base-url $(URL) --mcp-url http://127.0.0.1:$(MCP_PORT)/mcp \
	  --allowed-origin http://127.0.0.1:$(SHOP_PORT) --allowed-origin http://localhost:$(SHOP_PORT) || exit 1; \
	DEBUG=1 $(PY) manage.py demo_shop --port $(SHOP_PORT) --widget-url $(URL) & shop=$$!; \
	DEBUG=1 WAYPOINT_WEBHOOK_ALLOW_PRIVATE=1 WAYPOINT_TOOL_SOURCES_ALLOW_PRIVATE=1 $(VENV)/bin/daphne -b 127.0.0.1 -p $(PORT) config.asgi:application & server=$$!; \
	for p in $(PORT) $(SHOP_PORT); do until (exec 3<>/dev/tcp/127.0.0.1/$$p) 2>/dev/null; do \
	  kill -0 $$server 2>/dev/null && kill -0 $$shop 2>/dev/null && kill -0 $$mcp 2>/dev/null || exit 1; sleep 0.2; done; done; \
	printf '\nWaypoint is ready. Open:\n  %-14s %s\n  %-14s %s\n  %-14s %s\n  %-14s %s\n\n' \
	  "customer page" "$(URL)" "demo shop" "http://localhost:$(SHOP_PORT)" \
	  "staff panel" "$(URL)/staff/ (make superuser creates your login)" "SDK demo" "$(URL)/static/waypoint/sdk-demo.html"; \
	wait $$server

# A staff login for the panel of `make run` (same database and settings), and the name customers
# see for it; ARGS passes options on (ARGS="--noinput --username ops --email ops@example.com" with
# DJANGO_SUPERUSER_PASSWORD and DJANGO_SUPERUSER_DISPLAY_NAME set).
superuser: install
	DEBUG=1 $(PY) manage.py createsuperuser $(ARGS)
	DEBUG=1 $(PY) manage.py display_name

test: install $(E2E_TOOLS)
	@bash tests/run.sh $(ARGS)

# axe-core, which the e2e suite injects into pages to check accessibility, at the version e2e/package-lock.json pins.
$(E2E_TOOLS): e2e/package.json e2e/package-lock.json
	@if command -v npm >/dev/null 2>&1; then npm ci --prefix e2e --no-audit --no-fund --loglevel=error && touch $@; \
	else echo "npm (Node.js) was not found: the e2e accessibility checks will be skipped (in CI they fail)." >&2; fi

# ruff, and the import contracts of pyproject.toml (the layers of docs/architecture.md).
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-logo

# Benchmarks against the raw database limit and LangGraph/DBOS (bench/RESULTS.md); needs PostgreSQL and Redis.
bench: install
	$(VENV)/bin/uv pip install -q --python $(PY) -e '.[dev,bench]'
	$(PY) -m bench.run $(ARGS)

# The randomized crash suite at length: WAYPOINT_SOAK_ROUNDS rounds (default 40), seed printed for replay.
soak: install
	WAYPOINT_SOAK_ROUNDS=$${WAYPOINT_SOAK_ROUNDS:-40} bash tests/run.sh tests/reliability/test_random_crashes.py -q -s --timeout=0 $(ARGS)
