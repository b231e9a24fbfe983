from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from django.core.management.base import BaseCommand, CommandError
from django.template.loader import render_to_string

from apps.agent.demo import DEMO_NAME
from apps.agent.models import Assistant

PAGES = {"/": "home", "/index.html": "home", "/cart": "cart"}


class Command(BaseCommand):
    help = "Serve the demo shop: a page on another origin that embeds the widget with one script tag."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8001)
        parser.add_argument("--bind", default="127.0.0.1")
        parser.add_argument("--widget-url", default="http://127.0.0.1:8000", help="where Waypoint is served")
        parser.add_argument("--assistant", default="", help="the assistant to embed (default: the demo assistant)")

    def handle(self, *args, port: int, bind: str, widget_url: str, assistant: str, **options):
        if not assistant:
            demo = Assistant.objects.filter(is_demo=True, name=DEMO_NAME).first()
            if demo is None:
                raise CommandError("no demo assistant: run `manage.py load_demo` first, or pass --assistant")
            assistant = str(demo.id)
        # Rendered once: the shop is static, and serving it needs no database.
        pages = {
            path: render_to_string("widget/demo_shop.html", {"page": page, "widget_url": widget_url.rstrip("/"), "assistant_id": assistant}).encode()
            for path, page in PAGES.items()
        }

        class Shop(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the http.server API
                body = pages.get(self.path.split("?")[0])
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.end_headers()
                self.wfile.write(body or b"not found")

            def log_message(self, format, *args):  # noqa: A002 - the http.server API
                pass

        server = ThreadingHTTPServer((bind, port), Shop)
        # The shop must be another site than the widget's 127.0.0.1 to show embedding as it really is, so
        # the address to open on this machine is localhost (README's), whatever loopback address it binds.
        shown = "localhost" if bind in ("127.0.0.1", "0.0.0.0", "::", "::1") else bind
        self.stdout.write(f"demo shop on http://{shown}:{port}/ embedding assistant {assistant} from {widget_url}", ending="\n")
        self.stdout.flush()
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
