"""The one ASGI application: pages, API, static files and websockets (`daphne config.asgi:application`)."""

import gc
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from django.core.asgi import get_asgi_application  # noqa: E402

django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from apps.agent import runner  # noqa: E402
from apps.knowledge import indexing as knowledge_indexing  # noqa: E402
from apps.ops.access import silence_daphne_access_log  # noqa: E402
from apps.staff.routing import websocket_urlpatterns as staff_websocket_urlpatterns  # noqa: E402
from apps.webhooks import delivery as webhook_delivery  # noqa: E402
from apps.widget.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(URLRouter(websocket_urlpatterns + staff_websocket_urlpatterns)),
    }
)

runner.start()
webhook_delivery.start()
knowledge_indexing.start()
silence_daphne_access_log()

# What loading made (modules, settings, URL patterns, templates) lives as long as the process:
# frozen out of the collector, a full collection no longer walks it. Walking it took 60 ms and
# more with every thread stopped, which a push on an idle server could wait behind.
gc.freeze()
