"""The ``toolguard`` command, driven through click's CliRunner on real files."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from toolguard.cli import main

SAMPLES = Path(__file__).resolve().parent.parent / "schemas" / "samples"


def test_version() -> None:
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0
    assert "toolguard" in result.output


def test_validate_accepts_valid_document() -> None:
    result = CliRunner().invoke(
        main,
        [
            "validate",
            "--schema",
            str(SAMPLES / "book_flight.schema.json"),
            str(SAMPLES / "book_flight.valid.json"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("valid:")


def test_validate_reports_offset_path_and_reason() -> None:
    doc = (SAMPLES / "book_flight.invalid.json").read_text()
    result = CliRunner().invoke(
        main,
        [
            "validate",
            "--schema",
            str(SAMPLES / "book_flight.schema.json"),
            str(SAMPLES / "book_flight.invalid.json"),
        ],
    )
    assert result.exit_code == 1, result.output
    # "passengers": 12 exceeds the maximum of 9 at its second digit: 1 could still become 1..9, 12 cannot.
    offset = doc.index("12,") + 1  # the "2": no integer starting with 12 is <= 9
    assert f"rejected at offset {offset}" in result.output
    assert "/passengers" in result.output
