"""Conformance with the official JSON-Schema-Test-Suite (required tests of draft 7 and draft 2020-12).

Every test document is validated twice (whole, and one character per ``feed``) with ``format_assertion=False``
(the suite's required ``format`` tests expect annotation-only behaviour). Accounting:

- *passed*: the verdict after ``close()`` matches ``valid`` and both feedings agree.
- *refused*: the schema needs a document from ``http://localhost:1234/`` (the suite's remote fixtures) and
  construction raised ``RemoteRefRefused``; toolguard never fetches, so these are excluded from the figure.
- *excluded*: listed in ``EXCLUDED`` with the reason.

Run ``python tests/stream/test_conformance.py`` to print the figures.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolguard import RemoteRefRefused, StreamValidator

SUITE = Path(__file__).resolve().parents[1] / "data" / "json-schema-test-suite" / "tests"
DRAFTS = {
    "draft7": "http://json-schema.org/draft-07/schema#",
    "draft2020-12": "https://json-schema.org/draft/2020-12/schema",
}
# (file, group description, test description) -> why it is excluded.
EXCLUDED = {
    (
        "vocabulary.json",
        "schema that uses custom metaschema with with no validation vocabulary",
        "no validation: invalid number, but it still validates",
    ): "its $schema is a custom metaschema at http://localhost:1234 whose $vocabulary turns validation off; "
    "toolguard never fetches it and, like jsonschema, treats an unknown $schema as draft 2020-12",
}


def groups(draft: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for path in sorted((SUITE / draft).glob("*.json")):
        for group in json.loads(path.read_text(encoding="utf-8")):
            yield path.name, group


def run_group(draft: str, name: str, group: dict[str, Any]) -> tuple[int, int, int, list[str]]:
    """(passed, refused, excluded, failures) for one group."""
    schema = group["schema"]
    if isinstance(schema, dict) and "$schema" not in schema:
        schema = {**schema, "$schema": DRAFTS[draft]}
    tests = group["tests"]
    try:
        compiled = StreamValidator(schema, format_assertion=False).compiled
    except RemoteRefRefused:
        needs_remote = "localhost:1234" in json.dumps(group["schema"])
        if needs_remote:
            return 0, len(tests), 0, []
        return 0, 0, 0, [f"{name}: {group['description']}: refused but needs no remote document"]
    passed = excluded = 0
    failures = []
    for case in tests:
        if (name, group["description"], case["description"]) in EXCLUDED:
            excluded += 1
            continue
        text = json.dumps(case["data"])
        whole = StreamValidator(compiled, format_assertion=False)
        whole.feed(text)
        verdict = whole.close()
        split = StreamValidator(compiled, format_assertion=False)
        for c in text:
            split.feed(c)
        if (verdict.state == "complete") == case["valid"] and split.close() == verdict:
            passed += 1
        else:
            failures.append(f"{name}: {group['description']}: {case['description']}: {verdict}")
    return passed, 0, excluded, failures


def conformance(draft: str) -> tuple[int, int, int, int, list[str]]:
    passed = refused = excluded = total = 0
    failures: list[str] = []
    for name, group in groups(draft):
        p, r, e, f = run_group(draft, name, group)
        passed, refused, excluded = passed + p, refused + r, excluded + e
        total += len(group["tests"])
        failures += f
    return passed, refused, excluded, total, failures


@pytest.mark.parametrize("draft", sorted(DRAFTS))
def test_conformance(draft: str) -> None:
    passed, refused, excluded, total, failures = conformance(draft)
    counted = total - refused - excluded
    print(f"{draft}: {passed}/{counted} ({refused} refused: remote refs; {excluded} excluded)")
    assert not failures, "\n".join(failures[:20])
    assert passed == counted
    assert counted > 0.9 * total


if __name__ == "__main__":
    for d in sorted(DRAFTS):
        p, r, e, t, f = conformance(d)
        print(f"{d}: {p}/{t - r - e} passed ({r} refused: need remote refs; {e} excluded; {t} in the suite)")
        for line in f:
            print("  FAIL", line)
