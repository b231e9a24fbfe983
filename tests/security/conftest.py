# The API's client and credentials, for the security tests that go through the API.
from tests.api.conftest import Api, api, api_key, fresh_rate_limits  # noqa: F401
