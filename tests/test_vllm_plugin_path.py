"""``toolguard vllm-plugin-path``: the plugin file for ``vllm serve --tool-parser-plugin``, without vLLM."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from toolguard.cli import main


def test_the_printed_path_is_the_plugin_file_and_needs_no_vllm() -> None:
    result = CliRunner().invoke(main, ["vllm-plugin-path"])
    assert result.exit_code == 0, result.output
    path = Path(result.output.strip())
    assert path.name == "_plugin.py" and path.is_file()
    assert "import toolguard.vllm" in path.read_text()
    # the command works where vLLM is not installed (this venv) and imports none of it
    code = "import sys; from toolguard.cli import plugin_path; plugin_path(); print('vllm' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
