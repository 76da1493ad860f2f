"""Configuration: defaults, file (JSON/TOML), environment, flags, the JSON Schema file, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from toolguard import ConfigError
from toolguard.cli import main
from toolguard.proxy import CONFIG_SCHEMA, ProxyConfig, load_config
from toolguard.proxy._config import schema_text

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schemas" / "config.schema.json"


def test_schema_file_is_the_schema() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text(), (
        "schemas/config.schema.json is stale: run "
        'python -c "from toolguard.proxy._config import write_schema;'
        " write_schema('schemas/config.schema.json')\""
    )
    Draft202012Validator.check_schema(CONFIG_SCHEMA)


def test_defaults_bind_localhost_and_match_the_schema() -> None:
    config = ProxyConfig(upstream="http://localhost:8000")
    assert config.host == "127.0.0.1"
    assert config.upstream == "http://localhost:8000/v1"  # no path: /v1 added
    assert ProxyConfig(upstream="http://h:1/openai/v1/").upstream == "http://h:1/openai/v1"
    for key, prop in CONFIG_SCHEMA["properties"].items():
        if "default" in prop:
            assert getattr(config, key) == prop["default"], key


def test_every_schema_key_is_a_config_field_and_back() -> None:
    from dataclasses import fields

    assert {f.name for f in fields(ProxyConfig)} == set(CONFIG_SCHEMA["properties"])


def test_precedence_file_env_overrides(tmp_path: Path) -> None:
    path = tmp_path / "proxy.json"
    path.write_text(
        json.dumps({"upstream": "http://file:1/v1", "mode": "pass", "port": 1111, "max_reasks": 5})
    )
    env = {"TOOLGUARD_PROXY_PORT": "2222", "TOOLGUARD_PROXY_TRUST_ENV": "yes", "UNRELATED": "x"}
    config = load_config(file=path, env=env, overrides={"max_reasks": 0, "host": None})
    assert (config.upstream, config.mode, config.port, config.trust_env, config.max_reasks) == (
        "http://file:1/v1",
        "pass",
        2222,
        True,
        0,
    )


def test_toml_file_with_proxy_table(tmp_path: Path) -> None:
    path = tmp_path / "proxy.toml"
    path.write_text('[proxy]\nupstream = "http://t:2/v1"\nstructured_output_hints = true\ndeadline = 30.5\n')
    config = load_config(file=path)
    assert config.structured_output_hints is True
    assert config.deadline == 30.5


@pytest.mark.parametrize(
    ("values", "needle"),
    [
        ({"upstream": "ftp://x"}, "upstream"),
        ({"upstream": "http://x", "mode": "loose"}, "mode"),
        ({"upstream": "http://x", "port": 70000}, "port"),
        ({"upstream": "http://x", "max_reasks": -1}, "max_reasks"),
        ({"upstream": "http://x", "colour": "blue"}, "colour"),
    ],
)
def test_invalid_values_name_the_key(values: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        load_config(overrides=values)


def test_bad_env_value_and_missing_upstream() -> None:
    with pytest.raises(ConfigError, match="TOOLGUARD_PROXY_PORT"):
        load_config(env={"TOOLGUARD_PROXY_PORT": "eighty", "TOOLGUARD_PROXY_UPSTREAM": "http://x"})
    with pytest.raises(ConfigError, match="no upstream"):
        load_config()


def test_bad_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid"):
        load_config(file=path)


def test_secrets_stay_out_of_repr_and_errors() -> None:
    config = ProxyConfig(upstream="http://x", auth_token="tok-SECRET-1", upstream_api_key="sk-SECRET-2")
    assert "SECRET" not in repr(config)
    with pytest.raises(ConfigError) as info:
        load_config(overrides={"upstream": "http://x", "upstream_api_key": "sk-SECRET-3", "port": "nope"})
    assert "SECRET" not in str(info.value)


def test_policy_follows_the_options() -> None:
    config = ProxyConfig(
        upstream="http://x", mode="pass", max_reasks=4, runaway_action="stop", upstream_retries=0
    )
    policy = config.policy
    assert (policy.stream, policy.max_reasks, policy.max_runaway_retries, policy.max_upstream_retries) == (
        "pass",
        4,
        0,
        0,
    )


def test_cli_print_config_merges_flags_env_and_file(tmp_path: Path) -> None:
    path = tmp_path / "proxy.toml"
    path.write_text('upstream = "http://file:1/v1"\nport = 1\nupstream_api_key = "sk-SECRET"\n')
    result = CliRunner().invoke(
        main,
        ["proxy", "--config", str(path), "--port", "3333", "--structured-output-hints", "--print-config"],
        env={"TOOLGUARD_PROXY_MODE": "pass"},
    )
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert (shown["upstream"], shown["port"], shown["mode"], shown["structured_output_hints"]) == (
        "http://file:1/v1",
        3333,
        "pass",
        True,
    )
    assert shown["upstream_api_key"] == "***"
    assert "SECRET" not in result.output


def test_cli_rejects_bad_config() -> None:
    result = CliRunner().invoke(main, ["proxy", "--print-config"], env={"TOOLGUARD_PROXY_UPSTREAM": "nope"})
    assert result.exit_code == 2
    assert "upstream" in result.output
