"""CDI specs (Container Device Interface, the files under /etc/cdi and /var/run/cdi): their kind and devices."""
from __future__ import annotations

from dataclasses import dataclass

import yaml

from webhook.host.nvsmi import ParseError

GPU_KIND = "nvidia.com/gpu"  # what `nvidia-ctk cdi generate` and the toolkit's nvidia-cdi-refresh write
SPEC_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True, slots=True)
class Spec:
    path: str
    kind: str
    cdi_version: str | None
    devices: tuple[str, ...]  # device names: "0", "all", "GPU-…", "0:1" (MIG)


def parse_spec(text: str, path: str) -> Spec:
    """A spec in YAML or JSON (JSON is YAML)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ParseError(f"{path} is not YAML or JSON: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
        raise ParseError(f"{path} is not a CDI spec: it has no kind")
    devices = data.get("devices") or []
    if not isinstance(devices, list):
        raise ParseError(f"{path}: devices must be a list")
    names = tuple(str(d["name"]) for d in devices if isinstance(d, dict) and d.get("name") is not None)
    version = data.get("cdiVersion")
    return Spec(path=path, kind=data["kind"], cdi_version=str(version) if version is not None else None,
                devices=names)
