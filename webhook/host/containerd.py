"""containerd's CRI configuration, parsed as TOML: which runtime handlers it has and whether CDI is on.

The CRI plugin's table is named by the config's `version`: 1 (containerd 1.x) `plugins.cri` (also
`plugins."io.containerd.grpc.v1.cri"`), 2 (containerd 1.x and 2.x) `plugins."io.containerd.grpc.v1.cri"`,
3 and later (containerd 2.x) `plugins."io.containerd.cri.v1.runtime"`. Drop-ins come from `imports` (globs;
relative ones are relative to the importing file); containerd merges each over the root config."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from typing import Any

from webhook.host.nvsmi import ParseError

_CRI_TABLES = {1: ("cri", "io.containerd.grpc.v1.cri"), 2: ("io.containerd.grpc.v1.cri",)}
_CRI_V3 = ("io.containerd.cri.v1.runtime",)


@dataclass(frozen=True, slots=True)
class Runtime:
    handler: str
    runtime_type: str | None
    binary_name: str | None  # options.BinaryName: the OCI runtime containerd runs for this handler
    table: str  # where it was found, for messages


@dataclass(frozen=True, slots=True)
class ConfigFile:
    path: str
    version: int
    imports: tuple[str, ...] = ()
    runtimes: dict[str, Runtime] = field(default_factory=dict)
    enable_cdi: bool | None = None  # None: not set in this file
    default_runtime: str | None = None


def _table(data: Any, *keys: str) -> dict | None:
    for k in keys:
        data = data.get(k) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else None


def parse_config(text: str, path: str) -> ConfigFile:
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ParseError(f"{path} is not valid TOML: {exc}") from None
    version = data.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ParseError(f"{path}: version must be a positive integer, not {version!r}")
    imports = data.get("imports", [])
    if not isinstance(imports, list) or not all(isinstance(i, str) for i in imports):
        raise ParseError(f"{path}: imports must be a list of paths")
    runtimes: dict[str, Runtime] = {}
    enable_cdi = default_runtime = None
    for plugin in _CRI_TABLES.get(version, _CRI_V3):
        cri = _table(data, "plugins", plugin)
        if cri is None:
            continue
        if isinstance(cri.get("enable_cdi"), bool):
            enable_cdi = cri["enable_cdi"]
        containerd = _table(cri, "containerd") or {}
        if isinstance(containerd.get("default_runtime_name"), str):
            default_runtime = containerd["default_runtime_name"]
        for handler, spec in (_table(containerd, "runtimes") or {}).items():
            if not isinstance(spec, dict):
                continue
            options = _table(spec, "options") or {}
            binary = options.get("BinaryName")
            runtimes[handler] = Runtime(
                handler=handler,
                runtime_type=spec.get("runtime_type") if isinstance(spec.get("runtime_type"), str) else None,
                binary_name=binary if isinstance(binary, str) and binary else None,
                table=f'plugins."{plugin}".containerd.runtimes.{handler}')
    return ConfigFile(path=path, version=version, imports=tuple(imports), runtimes=runtimes,
                      enable_cdi=enable_cdi, default_runtime=default_runtime)


@dataclass(frozen=True, slots=True)
class Containerd:
    """The root config and its drop-ins, in the order containerd merges them (later ones win)."""

    files: tuple[ConfigFile, ...]
    errors: tuple[str, ...] = ()  # drop-ins that do not parse, imports that match nothing readable

    def runtime(self, handler: str) -> tuple[Runtime, ConfigFile] | None:
        found = None
        for f in self.files:
            if handler in f.runtimes:
                found = (f.runtimes[handler], f)
        return found

    @property
    def enable_cdi(self) -> bool | None:
        value = None
        for f in self.files:
            if f.enable_cdi is not None:
                value = f.enable_cdi
        return value

    def newer_drop_ins(self) -> tuple[ConfigFile, ...]:
        """Drop-ins whose config version is above the root's: containerd 2.3 refuses to start with one."""
        root = self.files[0]
        return tuple(f for f in self.files[1:] if f.version > root.version)
