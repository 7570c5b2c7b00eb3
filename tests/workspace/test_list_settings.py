"""Every list setting of every server reads the same from flags, the environment and TOML."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest
from mcp_batteries._core.cli import _is_list, _positional_field, parse_settings
from mcp_batteries._entry.definition import ServerDefinition, discover

DEFINITIONS = discover()


def list_fields() -> list[tuple[str, str]]:
    return [
        (name, field)
        for name, definition in DEFINITIONS.items()
        for field, info in definition.settings.model_fields.items()
        if _is_list(info.annotation)
    ]


def sample(field: str, tmp_path: Path) -> list[str]:
    if field == "directories":
        first, second = tmp_path / "a", tmp_path / "b"
        first.mkdir(exist_ok=True)
        second.mkdir(exist_ok=True)
        return [str(first), str(second)]
    if field in ("databases",):
        return [f"sqlite:///{tmp_path / 'one.db'}", f"sqlite:///{tmp_path / 'two.db'}"]
    if field == "db":
        return [f"one=sqlite:///{tmp_path / 'one.db'}", f"two=sqlite:///{tmp_path / 'two.db'}"]
    if field in ("tools", "disable_tools"):
        return ["alpha", "beta"]
    if field == "confirm_tools":
        return ["write_file=never", "delete_path=destructive"]
    if field == "allowed_origins":
        return ["https://one.example.com", "https://two.example.com"]
    if field == "allowed_hosts":
        return ["one.example.com:*", "two.example.com"]
    return ["one.example.com", "10.0.0.0/8"]


def flag_args(definition: ServerDefinition[Any], field: str, values: list[str]) -> list[str]:
    if _positional_field(definition.settings) == field:
        return values
    flag = "--" + field.replace("_", "-")
    return [part for value in values for part in (flag, value)]


def strip_transport_checks(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if k not in ("tools", "disable_tools")}


@pytest.mark.parametrize(("server", "field"), list_fields(), ids=lambda v: str(v))
@pytest.mark.parametrize("source", ["flags", "env", "toml"])
def test_a_list_setting_reads_the_same_from_every_source(
    server: str, field: str, source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    definition = DEFINITIONS[server]
    values = sample(field, tmp_path)
    argv: list[str] = []
    if source == "flags":
        argv = flag_args(definition, field, values)
    elif source == "env":
        monkeypatch.setenv(definition.settings.env_prefix() + field.upper(), ",".join(values))
    else:
        config = tmp_path / "settings.toml"
        config.write_text(f"{field} = [{', '.join(repr(v).replace(chr(39), chr(34)) for v in values)}]\n")
        argv = ["--config", str(config)]
    if field == "allowed_hosts" or field == "allowed_origins":
        argv += ["--transport", "http"]
    monkeypatch.chdir(tmp_path)
    settings = parse_settings(definition.settings, argv)
    assert getattr(settings, field) == values
    assert typing.get_origin(list[str]) is list
