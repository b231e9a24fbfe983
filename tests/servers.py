"""The tests' name for the server processes of `devservers.processes`, which the bench starts too."""

from devservers.processes import (  # noqa: F401
    PYTHON,
    ROOT,
    DaphneServer,
    OwnPostgres,
    OwnRedis,
    ServerDatabase,
    base_database_url,
    free_port,
    is_postgres,
)
