"""Everything `host inventory` and `host check` know of a host, read once from a Source. Each fact is its
parsed value or a `Missing` that says why it could not be read (the checks turn those into unknowns)."""
from __future__ import annotations

from dataclasses import dataclass

from webhook.host import cdi, containerd, mig, nvsmi, toolkit
from webhook.host.node import Node
from webhook.host.sources import Missing, Source, glob
from webhook.policy.messages import Text

CONTAINERD_CONFIG = "/etc/containerd/config.toml"
CDI_DIRS = ("/etc/cdi", "/var/run/cdi")


@dataclass(frozen=True, slots=True)
class HostFacts:
    where: Text  # the source, as reports name it
    smi: nvsmi.Smi | Missing
    listing: nvsmi.Smi | Missing  # `nvidia-smi -L`: the MIG devices with their profiles
    profiles: tuple[mig.Profile, ...] | Missing
    profiles_text: str  # what `mig -lgip` said when it listed none
    ctk: tuple[toolkit.Version, bool] | Missing
    containerd_version: toolkit.Version | Missing
    containerd: containerd.Containerd | Missing
    cdi_specs: tuple[cdi.Spec, ...] | Missing
    cdi_errors: tuple[str, ...]
    euid: int | None
    processes: tuple[str, ...] | Missing
    notes: tuple[str, ...] = ()  # forms that were read instead of a better one, and why
    node: Node | None = None  # the Kubernetes Node, when given (`--node`, or node.json in a capture)


def _parsed(source: Source, name: str, parse):
    text = source.output(name)
    if isinstance(text, Missing):
        return text
    try:
        return parse(text)
    except nvsmi.ParseError as exc:
        return Missing(f"{name}: {exc}")


def read_smi(source: Source) -> tuple[nvsmi.Smi | Missing, list[str]]:
    """The GPUs from the richest form there is: XML, else the text report, else the reference deployment's CSV query."""
    reasons: list[str] = []
    for name, parse in (("nvidia-smi-q.xml", nvsmi.parse_xml), ("nvidia-smi-q.txt", nvsmi.parse_text),
                        ("query.csv", nvsmi.parse_query_csv)):
        got = _parsed(source, name, parse)
        if not isinstance(got, Missing):
            notes = [f"GPUs read from {name}, since {'; '.join(reasons)}"] if reasons else []
            if got.form == "csv":
                notes.append("the CSV query does not say MIG mode, persistence or compute mode: those are unknown")
            return got, notes
        reasons.append(got.reason)
        if got.absent and name == "nvidia-smi-q.xml":  # nvidia-smi is not there at all: no other form either
            break
    return Missing("; ".join(reasons), absent=all("not on PATH" in r for r in reasons)), []


def read_containerd(source: Source, config: str = CONTAINERD_CONFIG) -> containerd.Containerd | Missing:
    text = source.read(config)
    if isinstance(text, Missing):
        return text
    try:
        files = [containerd.parse_config(text, config)]
    except nvsmi.ParseError as exc:
        return Missing(str(exc))
    errors: list[str] = []
    seen = {config}
    queue = [(files[0], imp) for imp in files[0].imports]
    while queue:
        parent, pattern = queue.pop(0)
        if not pattern.startswith("/"):
            pattern = f"{parent.path.rpartition('/')[0]}/{pattern}"
        matches = glob(source, pattern)
        if isinstance(matches, Missing):
            errors.append(f"imports {pattern!r} of {parent.path}: {matches.reason}")
            continue
        for path in matches:
            if path in seen:
                continue
            seen.add(path)
            body = source.read(path)
            if isinstance(body, Missing):
                if not body.absent:
                    errors.append(f"{path}: {body.reason}")
                continue
            try:
                drop_in = containerd.parse_config(body, path)
            except nvsmi.ParseError as exc:
                errors.append(str(exc))
                continue
            files.append(drop_in)
            queue.extend((drop_in, imp) for imp in drop_in.imports)
    return containerd.Containerd(files=tuple(files), errors=tuple(errors))


def read_cdi(source: Source) -> tuple[tuple[cdi.Spec, ...] | Missing, tuple[str, ...]]:
    specs, errors, unreadable = [], [], []
    for folder in CDI_DIRS:
        entries = source.listdir(folder)
        if isinstance(entries, Missing):
            if not entries.absent:
                unreadable.append(entries.reason)
            continue
        for entry in entries:
            if not entry.endswith(cdi.SPEC_SUFFIXES):
                continue
            path = f"{folder}/{entry}"
            text = source.read(path)
            if isinstance(text, Missing):
                unreadable.append(text.reason)
                continue
            try:
                specs.append(cdi.parse_spec(text, path))
            except nvsmi.ParseError as exc:
                errors.append(str(exc))
    if unreadable and not any(s.kind == cdi.GPU_KIND for s in specs):
        return Missing("; ".join(unreadable)), tuple(errors)
    return tuple(specs), tuple(errors)


def collect(source: Source, *, containerd_config: str = CONTAINERD_CONFIG, node: Node | None = None) -> HostFacts:
    smi, notes = read_smi(source)
    profiles_text = source.output("mig-lgip.txt")
    profiles: tuple[mig.Profile, ...] | Missing
    if isinstance(profiles_text, Missing):
        profiles, said = profiles_text, ""
    else:
        try:
            profiles, said = mig.parse_lgip(profiles_text), profiles_text.strip()
        except nvsmi.ParseError as exc:
            profiles, said = Missing(f"mig-lgip.txt: {exc}"), ""
    specs, cdi_errors = read_cdi(source)
    procs = source.processes()
    return HostFacts(
        where=source.where,
        smi=smi,
        listing=_parsed(source, "list.txt", nvsmi.parse_list),
        profiles=profiles,
        profiles_text=said,
        ctk=_parsed(source, "nvidia-ctk-version.txt", toolkit.parse_ctk_version),
        containerd_version=_parsed(source, "containerd-version.txt", toolkit.parse_containerd_version),
        containerd=read_containerd(source, containerd_config),
        cdi_specs=specs,
        cdi_errors=cdi_errors,
        euid=source.euid(),
        processes=procs if isinstance(procs, Missing) else tuple(procs),
        notes=tuple(notes),
        node=node,
    )
