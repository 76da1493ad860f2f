"""Every fuzz finding, replayed: one JSON file per finding in ``tests/regressions/data``.

A finding file is what ``toolguard fuzz`` writes under ``--findings`` (target, seed, invariant, expected,
observed, input), copied here. While the bug is open the file carries ``"xfail": "<reason, owner>"`` and the
test is a strict xfail, so fixing the bug turns it into an XPASS failure: then delete the ``xfail`` key.
The replay runs the same check the fuzzer ran (``toolguard._fuzz.replay_finding``) on the stored input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolguard._fuzz import replay_finding

DATA = Path(__file__).resolve().parent / "data"


def _cases() -> list[Any]:
    params = []
    for path in sorted(DATA.glob("*.json")):
        record = json.loads(path.read_text())
        marks = []
        if record.get("xfail"):
            marks.append(pytest.mark.xfail(strict=True, reason=record["xfail"]))
        if record["target"] in ("grammar",):
            marks.append(pytest.mark.local)
        params.append(pytest.param(path, id=path.stem, marks=marks))
    return params


def test_data_files_are_findings() -> None:
    for path in DATA.glob("*.json"):
        record = json.loads(path.read_text())
        for key in ("target", "invariant", "expected", "observed", "input"):
            assert key in record, f"{path.name} lacks {key!r}"


@pytest.mark.parametrize("path", _cases())
def test_finding_stays_fixed(path: Path) -> None:
    record = json.loads(path.read_text())
    violations = replay_finding(path)
    if violations and violations[0].invariant == "unavailable":
        pytest.skip(violations[0].observed)
    broken = [v for v in violations if v.invariant == record["invariant"]]
    assert not broken, f"{record['invariant']}: expected {broken[0].expected}; observed {broken[0].observed}"
