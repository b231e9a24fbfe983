from tests.api.conftest import api, api_key, fresh_rate_limits  # noqa: F401 - fixtures of this package too
