"""An ASGI app served by uvicorn in a thread of this process: the MCP servers of tests and the bench."""

from __future__ import annotations

import threading
import time

import uvicorn


def serve(app, port: int) -> tuple[uvicorn.Server, threading.Thread]:
    """Serve an ASGI app on 127.0.0.1:`port` in a thread, once it answers; stop it with `should_exit`."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the MCP server did not start")
        time.sleep(0.02)
    return server, thread
