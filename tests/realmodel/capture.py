"""
Record what llama-cpp-python's OpenAI-compatible server sends, as JSON fixtures for the wire tests.

    .venv/bin/python -m tests.realmodel.capture http://127.0.0.1:PORT/v1

(with the server of tests/realmodel/ running on PORT). Each fixture holds the request that was sent
and the response exactly as it came: a JSON body, or a stream's `data:` chunks in order.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx

OUT = Path(__file__).resolve().parent.parent / "fakes" / "payloads"
LOOKUP = {"type": "function", "function": {
    "name": "lookup_order", "description": "Look an order up",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}
LONG_NAME = "lookup_order_" + "x" * 51  # 64 characters
ASK = [{"role": "system", "content": "You are a shop's support agent."}, {"role": "user", "content": "Where is order A-1?"}]

CASES = {
    "text": {"messages": ASK, "max_tokens": 24, "temperature": 0},
    "text_stream": {"messages": ASK, "max_tokens": 24, "temperature": 0, "stream": True, "stream_options": {"include_usage": True}},
    "length": {"messages": ASK, "max_tokens": 3, "temperature": 0},
    "named_tool": {"messages": ASK, "max_tokens": 40, "temperature": 0, "tools": [LOOKUP],
                   "tool_choice": {"type": "function", "function": {"name": "lookup_order"}}},
    "named_tool_stream": {"messages": ASK, "max_tokens": 40, "temperature": 0, "tools": [LOOKUP], "stream": True,
                          "stream_options": {"include_usage": True},
                          "tool_choice": {"type": "function", "function": {"name": "lookup_order"}}},
    # The longest tool name an assistant may have: this server's call id embeds it and passes 100 characters.
    "long_tool_name": {"messages": ASK, "max_tokens": 40, "temperature": 0, "tools": [{"type": "function", "function": {
        **LOOKUP["function"], "name": LONG_NAME}}], "tool_choice": {"type": "function", "function": {"name": LONG_NAME}}},
    "auto_tool": {"messages": ASK, "max_tokens": 24, "temperature": 0, "tools": [LOOKUP], "tool_choice": "auto"},
    "null_content_refused": {"max_tokens": 8, "messages": [*ASK, {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order_id": "A-1"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"status": "shipped"}'}]},
}


def capture(base_url: str, name: str, body: dict) -> dict:
    body = {"model": "smollm2", **body}
    with httpx.Client(timeout=120) as client:
        if body.get("stream"):
            with client.stream("POST", f"{base_url}/chat/completions", json=body) as response:
                chunks = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ") and line != "data: [DONE]"]
            return {"status": response.status_code, "request": body, "stream": chunks}
        response = client.post(f"{base_url}/chat/completions", json=body)
        return {"status": response.status_code, "request": body, "response": response.json()}


def main(base_url: str) -> None:
    from tests.realmodel.server import SERVER_PYTHON

    version = subprocess.run([str(SERVER_PYTHON), "-c", "import llama_cpp; print(llama_cpp.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    for name, body in CASES.items():
        record = {"source": f"llama-cpp-python {version} server, SmolLM2-135M-Instruct Q4_1", **capture(base_url, name, body)}
        path = OUT / f"llama_cpp_python_{name}.json"
        path.write_text(json.dumps(record, indent=1) + "\n")
        print(path.name, record["status"])


if __name__ == "__main__":
    main(sys.argv[1])
