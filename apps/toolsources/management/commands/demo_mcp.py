from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Serve the demo shop's MCP server (Streamable HTTP at /mcp), which the demo assistant's MCP tools call."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8002)
        parser.add_argument("--bind", default="127.0.0.1")

    def handle(self, *args, port: int, bind: str, **options):
        import uvicorn

        from apps.toolsources.demo import demo_server

        self.stdout.write(f"demo shop MCP server on http://{bind}:{port}/mcp", ending="\n")
        self.stdout.flush()
        uvicorn.run(demo_server().streamable_http_app(), host=bind, port=port, log_level="warning")
