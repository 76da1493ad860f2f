"""examples/proxy_protocols.py runs offline and prints what the README shows."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

pytest.importorskip("anthropic")

ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_prints_what_the_readme_shows(capsys: pytest.CaptureFixture[str]) -> None:
    namespace = runpy.run_path(str(ROOT / "examples" / "proxy_protocols.py"))
    namespace["demo"]()
    printed = capsys.readouterr().out
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (shown,) = re.findall(r"`examples/proxy_protocols.py --demo`.*?```text\n(.*?)```", readme, flags=re.S)
    assert printed == shown
    assert "retries=1" in printed and "'unit': 'celsius'" in printed
