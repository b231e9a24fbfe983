"""
Settings of the floor app: the least Django, Channels, Daphne and Redis need for a chat page.

Read from the same environment as Waypoint's (`DATABASE_URL`, `REDIS_URL` and the pool's size), so
`make bench` runs both on the same database server, channel layer and pool.
"""

from __future__ import annotations

import environ

env = environ.Env()

SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="floor-bench-only")
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = ["daphne", "channels", "bench.floor"]
MIDDLEWARE = ["django.middleware.csrf.CsrfViewMiddleware"]
ROOT_URLCONF = "bench.floor.urls"
ASGI_APPLICATION = "bench.floor.asgi.application"
TEMPLATES = [{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True}]
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

DATABASES = {"default": env.db("DATABASE_URL")}
_pool_max = env.int("WAYPOINT_DB_POOL_MAX_SIZE", default=20)
if _pool_max > 0 and DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":  # as Waypoint's (config/settings.py)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": min(env.int("WAYPOINT_DB_POOL_MIN_SIZE", default=2), _pool_max), "max_size": _pool_max,
        "timeout": env.float("WAYPOINT_DB_POOL_TIMEOUT_SECONDS", default=5.0),
    }
CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
                              "CONFIG": {"hosts": [env.str("REDIS_URL", default="redis://127.0.0.1:6379/0")]}}}
LOGGING = {"version": 1, "disable_existing_loggers": False, "handlers": {"console": {"class": "logging.StreamHandler"}},
           "root": {"handlers": ["console"], "level": "WARNING"}}
