#!/usr/bin/env bash
# CI helper for the AppWorld tests (issue 12). Source it from .ci/run after evolve's venv is
# active:   . .ci/appworld.sh
# It prepares AppWorld's own venv (appworld==0.1.3.post1, never in evolve's venv) in a cache
# outside the clone, reused between runs, and exports what the tests read: with
# EVOLVE_REQUIRE_APPWORLD=1 the AppWorld tests fail instead of skipping when it is missing.
# Run directly (bash .ci/appworld.sh), it only prepares the cache.
_aw_cache="${EVOLVE_CI_CACHE:-$HOME/.cache/evolve-ci}"
export EVOLVE_APPWORLD_HOME="${EVOLVE_APPWORLD_HOME:-$_aw_cache/appworld}"
export EVOLVE_REQUIRE_APPWORLD=1
mkdir -p "$EVOLVE_APPWORLD_HOME"
_aw_py="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.venv/bin/python"
[ -x "$_aw_py" ] || _aw_py=python
echo "== AppWorld venv in $EVOLVE_APPWORLD_HOME (cached; reused when present)"
_aw_start=$(date +%s)
if ! "$_aw_py" -m evolve appworld setup; then
  echo "error: could not prepare the AppWorld venv; the AppWorld tests will fail." >&2
fi
echo "== AppWorld ready in $(( $(date +%s) - _aw_start )) s"
unset _aw_cache _aw_py _aw_start
