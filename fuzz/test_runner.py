"""The fuzz runner, its oracles and generators, the CLI, and a short seeded run of each sans-IO target.

The short runs are what ``pytest fuzz/`` spends in CI: a fixed seed and a fixed number of cases per target, so
a run is reproducible. Findings already filed as open regressions (``tests/regressions/data`` files with an
``xfail`` key) do not fail these runs; any other finding does, and its JSON case is in the test's tmp folder.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner
from jsonschema.validators import validator_for

from toolguard._fuzz import Target, Violation, new_findings, register, replay_finding, run_fuzz
from toolguard._fuzz._instances import gen_instance, gen_value
from toolguard._fuzz._jsongen import dump, gen_schema, mutate
from toolguard._fuzz._jsonref import completions, is_complete, scan_prefix, strict_loads
from toolguard._fuzz._targets._common import text_shrinks
from toolguard.cli import main

ROOT = Path(__file__).resolve().parent.parent
REGRESSIONS = ROOT / "tests" / "regressions" / "data"
HARNESSES = Path(__file__).resolve().parent / "harnesses"
CORPUS = Path(__file__).resolve().parent / "corpus"
SEED = 20261129


def assert_no_new_findings(report: Any) -> None:
    new = new_findings(report, REGRESSIONS)
    assert not new, "new fuzz findings:\n" + "\n".join(
        f"{f.path}: {f.invariant}: {f.observed[:800]}" for f in new
    )


# -- a planted target exercises the runner itself ----------------------------------------------------------


class Planted(Target):
    """A toy target with a planted bug: any text containing '7' breaks 'no-seven'."""

    name = "planted"
    description = "test double for the runner"

    def generate(self, rng: random.Random) -> dict[str, Any]:
        return {"text": "".join(rng.choice("ab7") for _ in range(rng.randint(5, 30)))}

    def check(self, case: dict[str, Any]) -> list[Violation]:
        if "hang" in case:
            while True:
                time.sleep(0.01)
        if "boom" in case:
            raise KeyError("boom")
        return [Violation("no-seven", "no 7", case["text"])] if "7" in case["text"] else []

    def shrink(self, case: dict[str, Any]) -> Any:
        for smaller in text_shrinks(case["text"]):
            yield {"text": smaller}


class Missing(Target):
    name = "missing"

    def unavailable(self) -> str | None:
        return "not here"


register("planted", Planted)
register("missing", Missing)


def test_runner_records_shrinks_and_replays(tmp_path: Path) -> None:
    report = run_fuzz(targets=["planted"], time_budget=10, seed=1, max_inputs=40, findings_dir=tmp_path)
    (target,) = report.targets
    assert target.status == "ran" and target.inputs == 40
    assert len(target.findings) == 1  # every case shrinks to the same one; the rest count as the same bug
    assert target.duplicates > 0
    for finding in target.findings:
        assert finding.input == {"text": "7"}  # shrunk
        assert finding.path is not None and finding.path.exists()
        record = json.loads(finding.path.read_text())
        assert record["target"] == "planted" and record["invariant"] == "no-seven"
        assert [v.invariant for v in replay_finding(finding.path)] == ["no-seven"]
    again = run_fuzz(targets=["planted"], time_budget=10, seed=1, max_inputs=40, findings_dir=tmp_path / "b")
    assert [f.input for f in again.findings] == [f.input for f in report.findings]  # same seed, same cases


def test_runner_turns_hangs_and_crashes_into_findings(tmp_path: Path) -> None:
    for case, invariant in (
        ({"text": "a", "hang": 1}, "no-hang"),
        ({"text": "a", "boom": 1}, "no-unexpected-exception"),
    ):
        path = tmp_path / f"{invariant}.json"
        path.write_text(json.dumps({"target": "planted", "invariant": invariant, "input": case}))
        violations = replay_finding(path, hang_timeout=0.3)
        assert [v.invariant for v in violations] == [invariant]


def test_unavailable_targets_are_skipped_with_their_reason(tmp_path: Path) -> None:
    report = run_fuzz(
        targets=["missing", "planted"], time_budget=1, seed=1, max_inputs=3, findings_dir=tmp_path
    )
    skipped, ran = report.targets
    assert (skipped.status, skipped.skip_reason) == ("skipped", "not here")
    assert ran.status == "ran"


# -- oracles and generators --------------------------------------------------------------------------------


def test_prefix_scanner_agrees_with_json_loads() -> None:
    rng = random.Random(SEED)
    alphabet = '{}[]",:0123456789-+.eEtrufalsn \\u'
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8)))
        try:
            strict_loads(text)
            complete = True
        except ValueError:
            complete = False
        assert is_complete(text) == complete, text
    assert scan_prefix('{"a":1,"\\u0061":2}')[0] == 14  # a duplicate key dies at its closing quote
    assert scan_prefix('{"a":1,"\\u0061":2}', duplicates=False)[0] is None


def test_completions_complete_every_viable_prefix() -> None:
    rng = random.Random(SEED)
    for _ in range(60):
        text = dump(rng, gen_value(rng))
        for end in range(len(text) + 1):
            docs = completions(text[:end])
            assert docs and all(d.startswith(text[:end]) for d in docs)
            assert any(is_complete(d, duplicates=False) for d in docs), text[:end]


def test_generated_schemas_are_valid_and_instances_parse() -> None:
    rng = random.Random(SEED)
    for _ in range(40):
        schema = gen_schema(rng)
        validator_for(schema, default=jsonschema.Draft202012Validator).check_schema(schema)
        text = dump(rng, gen_instance(rng, schema))
        assert is_complete(text)
        strict_loads(text)
        mutate(rng, text)


# -- CLI ---------------------------------------------------------------------------------------------------


def test_cli_replays_a_finding(tmp_path: Path) -> None:
    path = tmp_path / "planted.json"
    path.write_text(json.dumps({"target": "planted", "invariant": "no-seven", "input": {"text": "x7"}}))
    result = CliRunner().invoke(main, ["fuzz", "--replay", str(path)])
    assert result.exit_code == 1, result.output
    assert "FAILS" in result.output and "no-seven" in result.output


def test_cli_fuzz_prints_a_summary(tmp_path: Path) -> None:
    findings = tmp_path / "findings"
    result = CliRunner().invoke(
        main, ["fuzz", "--target", "formats", "--time", "1.5", "--seed", "3", "--findings", str(findings)]
    )
    assert "toolguard fuzz summary (seed 3)" in result.output, result.output
    written = list(findings.glob("*.json")) if findings.exists() else []
    assert result.exit_code == (1 if written else 0), result.output


# -- short seeded runs (the CI budget) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "inputs"), [("stream", 150), ("runaway", 40), ("formats", 150), ("sse", 120)]
)
def test_short_seeded_run(target: str, inputs: int, tmp_path: Path) -> None:
    report = run_fuzz(
        targets=[target], time_budget=25, seed=SEED, max_inputs=inputs, findings_dir=tmp_path, shrink_time=1.0
    )
    (result,) = report.targets
    if result.status == "skipped":
        pytest.skip(result.skip_reason)
    assert result.inputs > 0
    assert_no_new_findings(report)


# -- the coverage-guided harnesses accept their own seeds --------------------------------------------------

# Seeds that hit an open bug, as "folder/name": reason (kept out of the corpus while possible, since
# libFuzzer stops at the first crash; the open bugs live in tests/regressions/data instead).
_KNOWN_BAD_SEEDS: dict[str, str] = {}


def _seed_params() -> list[Any]:
    params = []
    for harness, folder in (
        ("json_parser_harness", "json"),
        ("formats_harness", "formats"),
        ("sse_harness", "sse"),
    ):
        for path in sorted((CORPUS / folder).iterdir()):
            key = f"{folder}/{path.name}"
            marks = (
                [pytest.mark.xfail(strict=True, reason=_KNOWN_BAD_SEEDS[key])]
                if key in _KNOWN_BAD_SEEDS
                else []
            )
            params.append(pytest.param(harness, path, id=key, marks=marks))
    return params


@pytest.mark.parametrize(("harness", "seed_file"), _seed_params())
def test_harness_accepts_seed(harness: str, seed_file: Path) -> None:
    sys.path.insert(0, str(HARNESSES))
    try:
        module = __import__(harness)
    finally:
        sys.path.remove(str(HARNESSES))
    module.instrument()
    module.test_one_input(seed_file.read_bytes())
