#!/usr/bin/env bash
# Refresh requirements.lock, the exact versions every fresh machine installs (the README's two
# commands and .ci/run use it as pip constraints). Run it after changing a dependency in
# pyproject.toml or sim/pyproject.toml and commit the three files together; .ci/newest checks the
# ranges themselves against the newest releases.
set -euo pipefail
cd "$(dirname "$0")/../.."
uv=$(command -v uv || true)
if [ -z "$uv" ]; then
  tool=$(mktemp -d)
  trap 'rm -rf "$tool"' EXIT
  python3 -m venv "$tool" && "$tool/bin/pip" install -q uv==0.13.9
  uv="$tool/bin/uv"
fi
"$uv" pip compile tools/lock/requirements.in --universal --python-version 3.11 \
  --no-emit-package cockpit --no-emit-package cockpit-sim --custom-compile-command "bash tools/lock/refresh.sh" -o requirements.lock -q
