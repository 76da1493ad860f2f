"""Click options of ``toolguard proxy``, generated from ``CONFIG_SCHEMA`` (one truth for flags, env and file).

Each schema key ``some_key`` becomes ``--some-key`` (booleans: ``--some-key/--no-some-key``) read from the
environment as ``TOOLGUARD_PROXY_SOME_KEY``. Options carry no click default, so only what the user gave
overrides the config file (``proxy_overrides`` reads click's parameter sources).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ._config import _PROPERTIES, ENV_PREFIX

__all__ = ["proxy_options", "proxy_overrides"]

_GIVEN = (click.core.ParameterSource.COMMANDLINE, click.core.ParameterSource.ENVIRONMENT)


def _option(key: str, prop: dict[str, Any]) -> Callable[[Any], Any]:
    flag = "--" + key.replace("_", "-")
    envvar = ENV_PREFIX + key.upper()
    default = prop.get("default")
    help_ = prop.get("description", "")
    if default is not None and key not in ("auth_token", "upstream_api_key"):
        help_ += f"  [default: {default}]"
    kind = prop.get("type")
    if "enum" in prop:
        return click.option(
            flag, key, type=click.Choice(prop["enum"]), default=None, envvar=envvar, help=help_
        )
    if kind == "boolean":
        return click.option(f"{flag}/--no-{flag[2:]}", key, default=None, envvar=envvar, help=help_)
    if kind == "integer":
        return click.option(
            flag,
            key,
            type=click.IntRange(min=prop.get("minimum"), max=prop.get("maximum")),
            default=None,
            envvar=envvar,
            help=help_,
        )
    if kind == "number":
        return click.option(
            flag, key, type=click.FloatRange(min=prop.get("minimum")), default=None, envvar=envvar, help=help_
        )
    return click.option(flag, key, type=str, default=None, envvar=envvar, help=help_, metavar="TEXT")


def proxy_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate ``fn`` with ``--config``, ``--print-config`` and one option per config key."""
    for key, prop in reversed(list(_PROPERTIES.items())):
        if prop.get("type") != "object":  # mappings come from the file or the environment (JSON)
            fn = _option(key, prop)(fn)
    fn = click.option(
        "--print-config",
        is_flag=True,
        default=False,
        help="Print the merged configuration as JSON (secrets hidden) and exit.",
    )(fn)
    fn = click.option(
        "--config",
        "config_file",
        type=click.Path(exists=True, dir_okay=False),
        default=None,
        envvar=ENV_PREFIX + "CONFIG",
        help="A JSON or TOML config file (see schemas/config.schema.json); flags and"
        " TOOLGUARD_PROXY_* variables override it.",
    )(fn)
    return fn


def proxy_overrides(ctx: click.Context, options: dict[str, Any]) -> dict[str, Any]:
    """The options the user gave on the command line or in the environment."""
    return {k: v for k, v in options.items() if k in _PROPERTIES and ctx.get_parameter_source(k) in _GIVEN}
