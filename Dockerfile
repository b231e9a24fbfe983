# Waypoint: one image, one process type. Daphne serves pages, API, websockets and static files;
# run N replicas on one PostgreSQL + Redis (docs/scaling.md, deploy/).
FROM python:3.12-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY apps ./apps
COPY config ./config
RUN python -m venv /venv && /venv/bin/pip install --quiet .

FROM python:3.12-slim
ENV PATH=/venv/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 \
    PYTHONPATH=/app DJANGO_SETTINGS_MODULE=config.settings WAYPOINT_DATA_DIR=/tmp/waypoint
RUN useradd --system --uid 10001 --home-dir /app waypoint
WORKDIR /app
COPY --from=build /venv /venv
COPY --chown=waypoint manage.py ./
COPY --chown=waypoint apps ./apps
COPY --chown=waypoint config ./config
COPY --chown=waypoint templates ./templates
COPY --chown=waypoint static ./static
USER 10001
EXPOSE 8000
# --proxy-headers: the client address (rate limits, logs) comes from the load balancer's X-Forwarded-For.
CMD ["daphne", "--bind", "0.0.0.0", "--port", "8000", "--proxy-headers", "config.asgi:application"]
