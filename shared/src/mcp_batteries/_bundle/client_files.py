"""A client's configuration file, read and changed in its own format, keeping what the person wrote.

One interface over three formats, each edited so that everything but the entries we set stays as
the person left it (other servers, other settings, comments, order):

- JSON and JSON with comments (`jsonc.JsoncDocument`: spliced in place, so comments and layout
  survive; clients that reject comments get their commented files refused instead);
- YAML (Goose): ruamel.yaml's round trip keeps comments, order and quoting;
- TOML (Codex): tomlkit keeps comments, order and formatting.

`write_file` merges with a backup first and an atomic replace, writes nothing when nothing
changes, and sets the file owner-only when it holds a token.
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import tomlkit
import tomlkit.exceptions
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import YAMLError

from mcp_batteries._bundle.jsonc import JsoncDocument
from mcp_batteries._platform import files
from mcp_batteries.errors import ConfigError

__all__ = ["ClientFile", "WriteResult", "open_file", "read_file", "write_file"]


class ClientFile(Protocol):
    """A client file's text and the few edits `config` makes to it."""

    def entries(self) -> Mapping[str, Any]:
        """The servers already in the file, as plain values."""

    def set_entry(self, name: str, entry: Mapping[str, Any]) -> None: ...

    def inputs(self) -> list[Any]:
        """VS Code's top-level `inputs` (JSON files only)."""

    def set_input(self, item: Mapping[str, Any]) -> None:
        """Add VS Code's input, or replace the one with its id."""

    def text(self) -> str: ...


class JsonFile:
    def __init__(self, text: str, servers_key: tuple[str, ...], *, path: str, strict: bool) -> None:
        self._document = JsoncDocument(text, path=path, strict=strict)
        self._key = servers_key
        self._path = path

    def entries(self) -> Mapping[str, Any]:
        value: Any = self._document.value
        for key in self._key:
            value = value.get(key) if isinstance(value, dict) else None
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise ConfigError(f"{'.'.join(self._key)!r} in {self._path} is not a JSON object; fix it by hand")
        return value

    def set_entry(self, name: str, entry: Mapping[str, Any]) -> None:
        self._document.set_member(self._key, name, dict(entry))

    def inputs(self) -> list[Any]:
        found = self._document.value.get("inputs", [])
        if not isinstance(found, list):
            raise ConfigError(f"'inputs' in {self._path} is not a JSON array; fix it by hand first")
        return found

    def set_input(self, item: Mapping[str, Any]) -> None:
        for index, old in enumerate(self.inputs()):
            if isinstance(old, dict) and old.get("id") == item["id"]:
                if old != item:
                    self._document.replace_element(("inputs",), index, dict(item))
                return
        self._document.append_element(("inputs",), dict(item))

    def text(self) -> str:
        return self._document.text if self._document.text.endswith("\n") else self._document.text + "\n"


def _yaml() -> YAML:
    yaml = YAML()  # round trip: comments, order and quoting are kept
    yaml.preserve_quotes = True
    yaml.width = 4096  # never fold a long line the person wrote on one
    return yaml


class YamlFile:
    def __init__(self, text: str, servers_key: tuple[str, ...], *, path: str) -> None:
        try:
            loaded = _yaml().load(text) if text.strip() else None
        except YAMLError as exc:
            raise ConfigError(
                f"{path} is not valid YAML ({str(exc).splitlines()[0]}); fix it first"
            ) from None
        if loaded is None:
            loaded = CommentedMap()
        if not isinstance(loaded, CommentedMap):
            raise ConfigError(f"{path} does not hold a YAML mapping; fix it by hand first")
        self._data = loaded
        self._key = servers_key
        self._path = path

    def _table(self, create: bool) -> Any:
        table: Any = self._data
        for key in self._key:
            if table.get(key) is None:
                if not create:
                    return None
                table[key] = CommentedMap()
            table = table[key]
            if not isinstance(table, dict):
                raise ConfigError(f"{key!r} in {self._path} is not a mapping; fix it by hand first")
        return table

    def entries(self) -> Mapping[str, Any]:
        table = self._table(create=False)
        return {} if table is None else {name: _plain(value) for name, value in table.items()}

    def set_entry(self, name: str, entry: Mapping[str, Any]) -> None:
        self._table(create=True)[name] = dict(entry)

    def inputs(self) -> list[Any]:
        return []

    def set_input(self, item: Mapping[str, Any]) -> None:
        raise ConfigError(f"{self._path}: inputs are a VS Code feature")

    def text(self) -> str:
        out = io.StringIO()
        _yaml().dump(self._data, out)
        return out.getvalue()


def _plain(value: Any) -> Any:
    """A round-trip value (ruamel's or tomlkit's containers) as plain dicts, lists and scalars."""
    unwrap = getattr(value, "unwrap", None)
    if callable(unwrap):
        return unwrap()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value


class TomlFile:
    def __init__(self, text: str, servers_key: tuple[str, ...], *, path: str) -> None:
        try:
            self._document = tomlkit.parse(text)
        except tomlkit.exceptions.ParseError as exc:
            raise ConfigError(f"{path} is not valid TOML ({exc}); fix it first") from None
        self._key = servers_key
        self._path = path

    def _table(self, create: bool) -> Any:
        table: Any = self._document
        for key in self._key:
            if key not in table:
                if not create:
                    return None
                table[key] = tomlkit.table(is_super_table=True)
            table = table[key]
            if not isinstance(table, dict):
                raise ConfigError(f"{key!r} in {self._path} is not a table; fix it by hand first")
        return table

    def entries(self) -> Mapping[str, Any]:
        table = self._table(create=False)
        return {} if table is None else {name: _plain(value) for name, value in table.items()}

    def set_entry(self, name: str, entry: Mapping[str, Any]) -> None:
        table = tomlkit.table()
        for key, value in entry.items():
            table[key] = value
        self._table(create=True)[name] = table

    def inputs(self) -> list[Any]:
        return []

    def set_input(self, item: Mapping[str, Any]) -> None:
        raise ConfigError(f"{self._path}: inputs are a VS Code feature")

    def text(self) -> str:
        return tomlkit.dumps(self._document)


def open_file(
    text: str, file_format: str, servers_key: tuple[str, ...], *, path: str, strict_json: bool = True
) -> ClientFile:
    """`text` (a client's file, or "" for none yet) as a ClientFile of its format."""
    if file_format == "yaml":
        return YamlFile(text, servers_key, path=path)
    if file_format == "toml":
        return TomlFile(text, servers_key, path=path)
    return JsonFile(text, servers_key, path=path, strict=strict_json and file_format == "json")


def read_file(path: Path) -> str | None:
    """The file's text, or None when there is no file yet."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None


@dataclass(frozen=True)
class WriteResult:
    path: Path
    changed: bool
    backup: Path | None


def _backup_path(path: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    candidate = path.with_name(f"{path.name}.{stamp}.bak")
    number = 1
    while candidate.exists():
        number += 1
        candidate = path.with_name(f"{path.name}.{stamp}-{number}.bak")
    return candidate


def _atomic_write(path: Path, text: str, mode: int) -> None:
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    files.current().sync_directory(str(path.parent))  # the rename itself survives a crash


def write_file(path: Path, old_text: str | None, new_text: str, *, secret: bool) -> WriteResult:
    """Replace `path` (whose text was `old_text`) with `new_text`: backup first, atomically.

    `secret`: the new text holds a token, so the file (and its backup) become owner-only.
    """
    if old_text is not None and new_text == old_text:
        return WriteResult(path, changed=False, backup=None)
    backup = None
    mode = 0o600
    if old_text is not None:
        backup = _backup_path(path)
        shutil.copy2(path, backup)
        os.chmod(backup, 0o600)  # a copy of a configuration may hold secrets: only its owner reads it
        if not secret:
            mode = path.stat().st_mode & 0o7777
    else:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create {path.parent}: {exc.strerror}") from None
    try:
        _atomic_write(path, new_text, mode)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}") from None
    return WriteResult(path, changed=True, backup=backup)
