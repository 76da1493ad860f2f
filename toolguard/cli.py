"""The ``toolguard`` command: validate | proxy | serve | demo | fuzz.

Each subcommand only parses options and calls a keyword-only Python function, so the CLI and the Python API
share one path (uvicorn's ``main``/``run`` split). Heavy imports happen inside the subcommand. Options can also
come from the environment: ``TOOLGUARD_<COMMAND>_<OPTION>`` (click's ``auto_envvar_prefix``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from ._version import __version__

__all__ = ["main"]

EXIT_OK = 0
EXIT_REJECTED = 1
EXIT_USAGE = 2
EXIT_MISSING_EXTRA = 3


def _need_extra(extra: str, exc: ImportError) -> None:
    click.echo(
        f"this command needs toolguard[{extra}] ({exc.name or exc}): pip install 'toolguard[{extra}]'", err=True
    )
    sys.exit(EXIT_MISSING_EXTRA)


@click.group(context_settings={"auto_envvar_prefix": "TOOLGUARD", "help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="toolguard")
def main() -> None:
    """toolguard: make LLM tool calling reliable."""


@main.command()
@click.option("--schema", "schema_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="JSON Schema file (or an OpenAI tool JSON: its function.parameters is used).")
@click.option("--chunk-size", default=16, show_default=True, help="Feed the document in chunks of this size.")
@click.argument("document", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
def validate(schema_path: str, chunk_size: int, document: str) -> None:
    """Stream DOCUMENT through the StreamValidator and print where it was rejected and why."""
    schema: Any = json.loads(Path(schema_path).read_text())
    if isinstance(schema, dict) and schema.get("type") == "function" and "function" in schema:
        schema = schema["function"].get("parameters", {})
    text = sys.stdin.read() if document == "-" else Path(document).read_text()
    code = run_validate(schema=schema, text=text, chunk_size=chunk_size, echo=click.echo)
    sys.exit(code)


def run_validate(*, schema: Any, text: str, chunk_size: int = 16, echo: Any = print) -> int:
    """Feed ``text`` to a StreamValidator in chunks; print the verdict. Returns the exit code."""
    from ._stream import StreamValidator

    validator = StreamValidator(schema)
    verdict = None
    for start in range(0, max(len(text), 1), max(chunk_size, 1)):
        verdict = validator.feed(text[start : start + chunk_size])
        if verdict.state == "rejected":
            break
    if verdict is None or verdict.state != "rejected":
        verdict = validator.close()
    if verdict.state == "rejected" and verdict.error is not None:
        err = verdict.error
        line = text.count("\n", 0, err.offset) + 1
        col = err.offset - (text.rfind("\n", 0, err.offset) + 1) + 1
        echo(f"rejected at offset {err.offset} (line {line}, column {col}), path {err.path or '/'}: {err.message}")
        snippet_start = max(0, err.offset - 30)
        echo("  " + text[snippet_start : err.offset + 1].replace("\n", " "))
        echo("  " + " " * (err.offset - snippet_start) + "^")
        return EXIT_REJECTED
    echo(f"valid: {len(text)} characters accepted")
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    main()
