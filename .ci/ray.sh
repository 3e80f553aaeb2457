#!/usr/bin/env bash
# Installs the `ray` extra (for `--executor ray` and the `ray` tests) into the active virtual
# environment from wheels cached outside the clone, and makes the `ray` tests required.
#
# Source it with the venv active:  . .ci/ray.sh
# Cache: ${EVOLVE_CI_CACHE:-$HOME/.cache/evolve-ci}/wheels/ray-<version> (Ray's wheel, ~79 MB,
# and its dependencies), downloaded once; later runs install with --no-index from it.
set -euo pipefail

RAY_VERSION=2.60.0
_cache=${EVOLVE_CI_CACHE:-$HOME/.cache/evolve-ci}
_wheels=$_cache/wheels/ray-$RAY_VERSION
mkdir -p "$_cache/wheels"

# One download at a time, whoever asks (two CI runs, or a run and a developer).
exec 8>"$_cache/.ray.lock"
flock 8
if [ ! -f "$_wheels/.complete" ]; then
  echo "ray.sh: downloading ray $RAY_VERSION and its dependencies into $_wheels" >&2
  _tmp=$(mktemp -d "$_cache/wheels/.ray-XXXXXX")
  python -m pip download -q "ray==$RAY_VERSION" -d "$_tmp" >&2
  rm -rf "$_wheels"
  mv "$_tmp" "$_wheels"
  touch "$_wheels/.complete"
fi
flock -u 8
exec 8>&-

python -m pip install -q --no-index --find-links "$_wheels" "ray==$RAY_VERSION" >&2
export EVOLVE_REQUIRE_RAY=1
