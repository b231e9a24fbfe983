"""Waypoint settings, read from the environment (see README "Running")."""

from __future__ import annotations

import secrets
import sys
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()

DATA_DIR = Path(env.str("WAYPOINT_DATA_DIR", default=str(BASE_DIR / "var")))
DATA_DIR.mkdir(parents=True, exist_ok=True)

TESTING = "pytest" in sys.modules
DEBUG = env.bool("DEBUG", default=False)


def _dev_secret(name: str) -> str:
    """Return a per-checkout random secret, created on first use, for development and tests only."""
    path = DATA_DIR / name
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="")
if not SECRET_KEY:
    if not (DEBUG or TESTING):
        raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = _dev_secret("dev-secret-key")

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "daphne",
    "servestatic",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "apps.ledger",
    "apps.conversations",
    "apps.runs",
    "apps.actions",
    "apps.agent",
    "apps.api",
    "apps.widget",
]

MIDDLEWARE = [
    "apps.ops.access.AccessLogMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "servestatic.middleware.ServeStaticMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "apps.ops.outage.OutageMiddleware",
    "apps.ops.input.ControlCharacterMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.csp",
                "apps.staff.context.waiting",
            ],
        },
    },
]

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{DATA_DIR / 'waypoint.sqlite3'}"),
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers proceed during a write; IMMEDIATE takes the write lock at BEGIN so two
    # writers queue instead of failing later with "database is locked".
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
else:
    DATABASES["default"].setdefault("CONN_MAX_AGE", 0)
    DATABASES["default"]["TEST"] = {"NAME": env.str("WAYPOINT_TEST_DATABASE", default="test_waypoint")}
    # Under ASGI every request runs on a thread of its own, so CONN_MAX_AGE keeps nothing: without a
    # pool each request (and each push) starts a PostgreSQL session, 8-10 ms of server CPU apiece.
    # The pool hands each one a connection that is already open, checked with one empty round trip
    # first (so one dropped by a database restart is replaced, not handed out). A request waits
    # for a free connection up to the timeout, then answers 503 as during an outage (docs/scaling.md).
    # Not in the test process itself: each async test runs sync code on threads of its own event
    # loop, which end without handing their connection back, and would drain a pool across the
    # suite. The Daphne servers the tests start pool as in production.
    WAYPOINT_DB_POOL_MAX_SIZE = env.int("WAYPOINT_DB_POOL_MAX_SIZE", default=0 if TESTING else 20)
    if WAYPOINT_DB_POOL_MAX_SIZE > 0:
        DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool keeps connections; Django must not as well
        DATABASES["default"]["CONN_HEALTH_CHECKS"] = True  # Django gives the pool psycopg_pool's check_connection
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": min(env.int("WAYPOINT_DB_POOL_MIN_SIZE", default=2), WAYPOINT_DB_POOL_MAX_SIZE),
            "max_size": WAYPOINT_DB_POOL_MAX_SIZE,
            "timeout": env.float("WAYPOINT_DB_POOL_TIMEOUT_SECONDS", default=5.0),
        }

REDIS_URL = env.str("REDIS_URL", default="")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Served straight from the source folders so one Daphne process serves everything without a
# collectstatic step; files are read once and cached with ETags.
SERVESTATIC_USE_FINDERS = True
SERVESTATIC_AUTOREFRESH = DEBUG

LOGIN_URL = "/staff/login/"

SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=False)
SESSION_COOKIE_SECURE = env.bool("SECURE_COOKIES", default=not DEBUG and not TESTING)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
SILENCED_SYSTEM_CHECKS = env.list("SILENCED_SYSTEM_CHECKS", default=[])
if not SECURE_SSL_REDIRECT:
    # TLS is terminated by the load balancer in front of Daphne (docs/scaling.md).
    SILENCED_SYSTEM_CHECKS.append("security.W008")
if not SECURE_HSTS_PRELOAD:
    SILENCED_SYSTEM_CHECKS.append("security.W021")

SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
    "base-uri": [CSP.NONE],
    "object-src": [CSP.NONE],
}

DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("WAYPOINT_MAX_BODY_BYTES", default=1_000_000)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    # Daphne's start-up notice that HTTP/2 is off is noise here: a proxy in front speaks HTTP/2 and TLS.
    "filters": {"no_http2_notice": {"()": "django.utils.log.CallbackFilter",
                                    "callback": lambda record: not record.getMessage().startswith("HTTP/2 support")}},
    # httpx logs every request's whole URL at INFO (httpcore its host at DEBUG): an outgoing call's
    # URL is an API caller's and may carry a token in its query, so neither logs below WARNING.
    "loggers": {"django.channels.server": {"level": "WARNING"}, "daphne.server": {"filters": ["no_http2_notice"]},
                "httpx": {"level": "WARNING"}, "httpcore": {"level": "WARNING"},
                # The same of the MCP client's httpx2 (a tool source's URL); the MCP SDK's own chatter.
                "httpx2": {"level": "WARNING"}, "httpcore2": {"level": "WARNING"}, "mcp": {"level": "WARNING"}},
}

# --- Waypoint ---------------------------------------------------------------------------------
WAYPOINT_SIGNING_KEY = env.str("WAYPOINT_SIGNING_KEY", default="")
WAYPOINT_VERIFY_KEYS = env.list("WAYPOINT_VERIFY_KEYS", default=[])
WAYPOINT_STEP_BUDGET = env.int("WAYPOINT_STEP_BUDGET", default=8)
WAYPOINT_IDLE_TIMEOUT_SECONDS = env.int("WAYPOINT_IDLE_TIMEOUT_SECONDS", default=1800)
WAYPOINT_RETENTION = env.str("WAYPOINT_RETENTION", default="24h")
WAYPOINT_SIMPLE_EXPIRY_SECONDS = env.int("WAYPOINT_SIMPLE_EXPIRY_SECONDS", default=15 * 60)
WAYPOINT_WEBHOOK_ALLOW_PRIVATE = env.bool("WAYPOINT_WEBHOOK_ALLOW_PRIVATE", default=False)
WAYPOINT_WEBHOOK_SECRET = env.str("WAYPOINT_WEBHOOK_SECRET", default="") or SECRET_KEY
WAYPOINT_WEBHOOK_TIMEOUT_SECONDS = env.float("WAYPOINT_WEBHOOK_TIMEOUT_SECONDS", default=10.0)
# Outgoing webhooks (apps/webhooks): seconds between attempts ("" is the Standard Webhooks
# schedule), attempts in flight per process (one per endpoint at most), the longest the dispatcher
# sleeps when no commit wakes it, and how long past an attempt's deadline
# (WAYPOINT_WEBHOOK_TIMEOUT_SECONDS, connect to last byte) a claimed delivery stays with the process
# that took it.
WAYPOINT_WEBHOOK_RETRY_SCHEDULE = env.str("WAYPOINT_WEBHOOK_RETRY_SCHEDULE", default="")
# None in the test process (which imports the ASGI application): a test sends with deliver_due().
WAYPOINT_WEBHOOK_WORKERS = env.int("WAYPOINT_WEBHOOK_WORKERS", default=0 if TESTING else 16)
WAYPOINT_WEBHOOK_POLL_SECONDS = env.float("WAYPOINT_WEBHOOK_POLL_SECONDS", default=30.0)
WAYPOINT_WEBHOOK_CLAIM_MARGIN_SECONDS = env.float("WAYPOINT_WEBHOOK_CLAIM_MARGIN_SECONDS", default=20.0)
# How long the runner waits out a database that dropped its connection (a restart, a failover)
# before it gives up on committing a step; the outcome it holds is kept all that time.
WAYPOINT_DB_RETRY_SECONDS = env.float("WAYPOINT_DB_RETRY_SECONDS", default=30.0)
# A conversation token unused this long expires; every use renews it.
WAYPOINT_TOKEN_MAX_AGE_DAYS = env.float("WAYPOINT_TOKEN_MAX_AGE_DAYS", default=30)
WAYPOINT_OPENAI_API_KEY = env.str("WAYPOINT_OPENAI_API_KEY", default=env.str("OPENAI_API_KEY", default=""))
WAYPOINT_OPENAI_BASE_URL = env.str("WAYPOINT_OPENAI_BASE_URL", default="")
# Further OpenAI-compatible base URLs an assistant may name (comma-separated). The deployment's key
# goes to these and to WAYPOINT_OPENAI_BASE_URL only; any other `model.base_url` is refused.
WAYPOINT_MODEL_BASE_URLS = env.list("WAYPOINT_MODEL_BASE_URLS", default=[])
# First back-off after a vendor 429/5xx; doubled on each of the three retries.
WAYPOINT_MODEL_RETRY_SECONDS = env.float("WAYPOINT_MODEL_RETRY_SECONDS", default=0.5)
# The context window of the deployment's models, in tokens, for assistants whose model sets no
# `context_tokens`: the history sent keeps the newest turns that fit (docs/api.md). 0: unbounded.
WAYPOINT_MODEL_CONTEXT_TOKENS = env.int("WAYPOINT_MODEL_CONTEXT_TOKENS", default=0)
# Pause between words when a scripted step simulates streaming (`"stream": true`).
WAYPOINT_SCRIPTED_STREAM_DELAY_SECONDS = env.float("WAYPOINT_SCRIPTED_STREAM_DELAY_SECONDS", default=0.0 if TESTING else 0.08)
# "thread": turns run on the server's worker threads (Daphne); "inline": in the committing thread
# right after commit, which keeps request-level tests deterministic.
WAYPOINT_RUNNER = env.str("WAYPOINT_RUNNER", default="inline" if TESTING else "thread")
WAYPOINT_LEASE_SECONDS = env.float("WAYPOINT_LEASE_SECONDS", default=5.0)
# A run that fails unexpectedly is retried after this, doubled each time (1, 2, 4 s), then failed.
WAYPOINT_RUN_RETRY_SECONDS = env.float("WAYPOINT_RUN_RETRY_SECONDS", default=1.0)
WAYPOINT_RECOVERY_INTERVAL_SECONDS = env.float("WAYPOINT_RECOVERY_INTERVAL_SECONDS", default=1.0)
# Expired simple runs, handoff time-outs, idle close and retention: looked at this often, each look
# one round trip when nothing is due (runner.housekeep).
WAYPOINT_HOUSEKEEPING_INTERVAL_SECONDS = env.float("WAYPOINT_HOUSEKEEPING_INTERVAL_SECONDS", default=15.0)
WAYPOINT_FAULT_AT = env.str("WAYPOINT_FAULT_AT", default="")
# Where people reach this deployment: the links it sends out of band (an approval's `approve_url`
# in a webhook) start with it.
WAYPOINT_PUBLIC_URL = env.str("WAYPOINT_PUBLIC_URL", default="http://127.0.0.1:8000").rstrip("/")
WAYPOINT_LOAD_DEMO = env.bool("WAYPOINT_LOAD_DEMO", default=False)
# A model name on WAYPOINT_OPENAI_BASE_URL for the demo assistant; unset: the scripted demo.
WAYPOINT_DEMO_MODEL = env.str("WAYPOINT_DEMO_MODEL", default="")

# Email follow-up (docs/handoff.md): a person's reply goes to the address a waiting customer left.
# The console in the dev command (`make run` prints each email); SMTP from EMAIL_* otherwise.
EMAIL_BACKEND = env.str("EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend" if DEBUG
                        else "django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = env.str("EMAIL_HOST", default="localhost")
EMAIL_PORT = env.int("EMAIL_PORT", default=25)
EMAIL_HOST_USER = env.str("EMAIL_HOST_USER", default="")
EMAIL_HOST_PASSWORD = env.str("EMAIL_HOST_PASSWORD", default="")
EMAIL_USE_TLS = env.bool("EMAIL_USE_TLS", default=False)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="Waypoint <support@localhost>")

# --- Staff panel (/staff/) --------------------------------------------------------------------
INSTALLED_APPS += ["axes", "apps.staff"]
# Last, as django-axes asks: it turns a locked-out login into its lockout response.
MIDDLEWARE += ["axes.middleware.AxesMiddleware"]
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
# Brute-force protection of the staff and admin logins: after this many failures a username, and
# separately an address, is refused until the cool-off has passed (a success resets the count).
AXES_FAILURE_LIMIT = env.int("WAYPOINT_STAFF_LOGIN_FAILURES", default=5)
# A float is hours for django-axes.
AXES_COOLOFF_TIME = env.int("WAYPOINT_STAFF_LOCKOUT_MINUTES", default=15) / 60
# Locked per (username, address): failures from elsewhere cannot lock the owner out of their account.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# The softer limit per username, whatever the address: login attempts in one lockout period.
WAYPOINT_STAFF_LOGIN_PER_USERNAME = env.int("WAYPOINT_STAFF_LOGIN_PER_USERNAME", default=30)
AXES_VERBOSE = False
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "staff/locked_out.html"

# --- Public API (/v1/) and rate limits ----------------------------------------------------------
# Self-hosted assets for the browsable API docs at /v1/docs (no CDN: the CSP allows only 'self').
INSTALLED_APPS += ["ninja"]
# Rate-limit counters live in the cache: Redis (shared by every process) when REDIS_URL is set. The
# key prefix names the database, so services on one Redis but different databases never share counts.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache" if REDIS_URL else "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": REDIS_URL or "waypoint",
        "KEY_PREFIX": "waypoint:" + str(DATABASES["default"].get("NAME", "")),
    }
}
# Fixed windows: requests per window per client address and per API key or conversation token
# (HTTP API and websocket connects together); 0 disables a limit. Use `daphne --proxy-headers`
# behind a load balancer so the client address is the real one.
WAYPOINT_RATE_LIMIT_WINDOW_SECONDS = env.int("WAYPOINT_RATE_LIMIT_WINDOW_SECONDS", default=60)
WAYPOINT_RATE_LIMIT_PER_IP = env.int("WAYPOINT_RATE_LIMIT_PER_IP", default=1200)
WAYPOINT_RATE_LIMIT_PER_CREDENTIAL = env.int("WAYPOINT_RATE_LIMIT_PER_CREDENTIAL", default=600)

# --- Operations: /healthz and /readyz for load balancers and Kubernetes probes (deploy/) -------
INSTALLED_APPS += ["apps.ops"]

# --- People, workspaces, idle close (docs/people.md) -------------------------------------------
INSTALLED_APPS += ["apps.people", "apps.workspaces"]
INSTALLED_APPS += ["apps.webhooks"]
# Each conversation's files and artifacts live under <this>/<conversation id>/.
WAYPOINT_WORKSPACE_DIR = Path(env.str("WAYPOINT_WORKSPACE_DIR", default=str(DATA_DIR / "workspaces")))
WAYPOINT_WORKSPACE_MAX_FILE_BYTES = env.int("WAYPOINT_WORKSPACE_MAX_FILE_BYTES", default=5_000_000)

# --- AG-UI: any AG-UI client drives a conversation (docs/ag-ui.md) -------------------------------
INSTALLED_APPS += ["apps.agui"]

# --- Knowledge: the team's help content, split into passages and searched (docs/knowledge.md) ----
INSTALLED_APPS += ["apps.knowledge"]
INSTALLED_APPS += ["apps.toolsources"]
# Tool sources (docs/tools.md): MCP servers on private or loopback addresses are refused unless this
# is set; their header values are encrypted with this Fernet key (one derived from SECRET_KEY if unset).
WAYPOINT_TOOL_SOURCES_ALLOW_PRIVATE = env.bool("WAYPOINT_TOOL_SOURCES_ALLOW_PRIVATE", default=False)
WAYPOINT_TOOL_SOURCES_KEY = env.str("WAYPOINT_TOOL_SOURCES_KEY", default="")
# Listing a server's tools gives up after this; one answer (a listing or a result) may be this large.
WAYPOINT_TOOL_SOURCES_LIST_TIMEOUT_SECONDS = env.float("WAYPOINT_TOOL_SOURCES_LIST_TIMEOUT_SECONDS", default=20.0)
WAYPOINT_TOOL_SOURCES_MAX_RESULT_BYTES = env.int("WAYPOINT_TOOL_SOURCES_MAX_RESULT_BYTES", default=8_000_000)
WAYPOINT_KNOWLEDGE_MAX_FILE_BYTES = env.int("WAYPOINT_KNOWLEDGE_MAX_FILE_BYTES", default=10 * 1024 * 1024)
# Content up to this size is indexed within the request that sends it; larger content answers at
# once with status "indexing" and is indexed by the background indexer.
WAYPOINT_KNOWLEDGE_INLINE_BYTES = env.int("WAYPOINT_KNOWLEDGE_INLINE_BYTES", default=256 * 1024)
# The indexer thread of each server process (config/asgi.py); tests call indexing.index_pending().
WAYPOINT_KNOWLEDGE_INDEXER = env.bool("WAYPOINT_KNOWLEDGE_INDEXER", default=not TESTING)
WAYPOINT_KNOWLEDGE_POLL_SECONDS = env.float("WAYPOINT_KNOWLEDGE_POLL_SECONDS", default=5.0)
# How long an indexer's claim on a pending source lasts: a process that dies holding one leaves it
# to be indexed again this long after it took it.
WAYPOINT_KNOWLEDGE_CLAIM_SECONDS = env.float("WAYPOINT_KNOWLEDGE_CLAIM_SECONDS", default=300.0)
# Hybrid search (docs/knowledge.md): an OpenAI-compatible embeddings API ("http://host:port/v1"; ""
# for keyword search only), its model, and how long one request may take.
WAYPOINT_EMBEDDINGS_BASE_URL = env.str("WAYPOINT_EMBEDDINGS_BASE_URL", default="")
WAYPOINT_EMBEDDINGS_MODEL = env.str("WAYPOINT_EMBEDDINGS_MODEL", default="text-embedding-3-small")
WAYPOINT_EMBEDDINGS_API_KEY = env.str("WAYPOINT_EMBEDDINGS_API_KEY", default="")
WAYPOINT_EMBEDDINGS_TIMEOUT_SECONDS = env.float("WAYPOINT_EMBEDDINGS_TIMEOUT_SECONDS", default=10.0)
