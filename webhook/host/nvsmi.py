"""nvidia-smi's GPU listings: `-q -x` (XML), `-q` (text), `--query-gpu` CSV and `-L`, as drivers R565 to R580+
print them. Every parser returns the same `Smi` shape, so the rest never cares which form was read."""
from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field, replace


class ParseError(ValueError):
    """The text is not the nvidia-smi output it was meant to be; the message says what was expected."""


@dataclass(frozen=True, slots=True)
class MigDevice:
    index: int
    profile: str | None = None  # "1g.18gb": only `-L` names it
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None
    memory_mib: int | None = None
    uuid: str | None = None


@dataclass(frozen=True, slots=True)
class Gpu:
    index: int
    product_name: str
    memory_mib: int | None = None
    mig_current: str | None = None  # "Enabled" | "Disabled"; None: the GPU has no MIG (N/A) or it was not read
    mig_pending: str | None = None
    mig_capable: bool | None = None  # None: not read (the CSV and `-L` forms do not say)
    persistence_mode: str | None = None
    compute_mode: str | None = None  # "Default" | "Exclusive_Process" | "Prohibited"
    mig_devices: tuple[MigDevice, ...] | None = None  # None: not read
    uuid: str | None = None
    serial: str | None = None
    bus_id: str | None = None

    @property
    def mig_enabled(self) -> bool:
        return self.mig_current == "Enabled"


# The command each form is read from, for messages.
FORMS = {"xml": "nvidia-smi -q -x", "text": "nvidia-smi -q", "csv": "nvidia-smi --query-gpu", "list": "nvidia-smi -L"}


@dataclass(frozen=True, slots=True)
class Smi:
    driver_version: str | None
    cuda_version: str | None
    gpus: tuple[Gpu, ...] = field(default_factory=tuple)
    form: str = "xml"  # which output it was read from: xml | text | csv | list


def _value(text: str | None) -> str | None:
    """An element's text, with nvidia-smi's "N/A" and "[N/A]"/"[Not Supported]" read as absent."""
    if text is None:
        return None
    v = text.strip()
    if not v or v.strip("[]") in ("N/A", "Not Supported", "Unknown Error", "Insufficient Permissions"):
        return None
    return v


def _mib(text: str | None) -> int | None:
    v = _value(text)
    if v is None:
        return None
    m = re.fullmatch(r"(\d+)\s*MiB", v)
    if not m:
        raise ParseError(f"memory {v!r} is not in MiB")
    return int(m.group(1))


def _int(text: str | None) -> int | None:
    v = _value(text)
    return int(v) if v is not None and v.isdigit() else None


def _mig_mode(current: str | None, pending: str | None) -> tuple[str | None, str | None, bool | None]:
    cur, pend = _value(current), _value(pending)
    if cur is None and pend is None:
        return None, None, False if current is not None else None
    return cur, pend, True


def parse_xml(text: str) -> Smi:
    """`nvidia-smi -q -x`. The DOCTYPE names an external DTD that is never fetched; entities are refused."""
    if "<!ENTITY" in text:
        raise ParseError("nvidia-smi XML declares entities; nvidia-smi never does")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ParseError(f"not nvidia-smi -q -x XML: {exc}") from None
    if root.tag != "nvidia_smi_log":
        raise ParseError(f"not nvidia-smi -q -x XML: the root element is <{root.tag}>, not <nvidia_smi_log>")
    gpus = []
    for index, g in enumerate(root.findall("gpu")):
        current, pending, capable = _mig_mode(g.findtext("mig_mode/current_mig"), g.findtext("mig_mode/pending_mig"))
        devices = None
        holder = g.find("mig_devices")
        if holder is not None:
            devices = tuple(
                MigDevice(index=_int(d.findtext("index")) or 0,
                          gpu_instance_id=_int(d.findtext("gpu_instance_id")),
                          compute_instance_id=_int(d.findtext("compute_instance_id")),
                          memory_mib=_mib(d.findtext("fb_memory_usage/total")))
                for d in holder.findall("mig_device"))
        gpus.append(Gpu(
            index=index,
            product_name=_value(g.findtext("product_name")) or "unknown",
            memory_mib=_mib(g.findtext("fb_memory_usage/total")),
            mig_current=current, mig_pending=pending, mig_capable=capable,
            persistence_mode=_value(g.findtext("persistence_mode")),
            compute_mode=_value(g.findtext("compute_mode")),
            mig_devices=devices,
            uuid=_value(g.findtext("uuid")),
            serial=_value(g.findtext("serial")),
            bus_id=g.get("id") or _value(g.findtext("pci/pci_bus_id")),
        ))
    return Smi(driver_version=_value(root.findtext("driver_version")),
               cuda_version=_value(root.findtext("cuda_version")), gpus=tuple(gpus), form="xml")


# `nvidia-smi -q`: "Key   : value" lines (the colon after blanks), nested by four-space indentation; a line
# without one opens a section ("GPU 00000000:00:06.0", whose bus id has colons of its own, "MIG Mode").
_TEXT_LINE = re.compile(r"^(?P<indent> *)(?P<key>.+?)(?:\s+:\s?(?P<value>.*))?$")


def _text_tree(text: str) -> list:
    """The text as nested [key, value, children] lists, in order (keys repeat: several GPUs, MIG devices)."""
    root: list = ["", None, []]
    stack: list[tuple[int, list]] = [(-1, root)]
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("====="):
            continue
        m = _TEXT_LINE.match(line.rstrip())
        if not m:
            continue
        indent = len(m.group("indent"))
        node: list = [m.group("key").strip(), m.group("value"), []]
        while stack[-1][0] >= indent:
            stack.pop()
        stack[-1][1][2].append(node)
        stack.append((indent, node))
    return root[2]


def _find(nodes: list, *path: str) -> list | None:
    for key in path:
        for n in nodes:
            if n[0] == key:
                found = n
                break
        else:
            return None
        nodes = found[2]
    return found


def _text(nodes: list, *path: str) -> str | None:
    n = _find(nodes, *path)
    return None if n is None or n[1] is None else n[1].strip()


def parse_text(text: str) -> Smi:
    """`nvidia-smi -q`, the readable form of the same report."""
    tree = _text_tree(text)
    if _find(tree, "Driver Version") is None:
        raise ParseError("not nvidia-smi -q output: no 'Driver Version' line")
    gpus: list[Gpu] = []
    for node in tree:
        if not (node[0].startswith("GPU ") and node[1] is None):
            continue
        g = node[2]
        current, pending, capable = _mig_mode(_text(g, "MIG Mode", "Current"), _text(g, "MIG Mode", "Pending"))
        holder = _find(g, "MIG Devices")
        devices = None
        if holder is not None or _text(g, "MIG Devices") is not None:
            devices = tuple(
                MigDevice(index=_int(_text(d[2], "Index")) or 0,
                          gpu_instance_id=_int(_text(d[2], "GPU Instance ID")),
                          compute_instance_id=_int(_text(d[2], "Compute Instance ID")),
                          memory_mib=_mib(_text(d[2], "FB Memory Usage", "Total")))
                for d in (holder[2] if holder is not None else []) if d[0] == "MIG Device")
        gpus.append(Gpu(
            index=len(gpus),
            product_name=_value(_text(g, "Product Name")) or "unknown",
            memory_mib=_mib(_text(g, "FB Memory Usage", "Total")),
            mig_current=current, mig_pending=pending, mig_capable=capable,
            persistence_mode=_value(_text(g, "Persistence Mode")),
            compute_mode=_value(_text(g, "Compute Mode")),
            mig_devices=devices,
            uuid=_value(_text(g, "GPU UUID")),
            serial=_value(_text(g, "Serial Number")),
            bus_id=node[0][4:].strip(),
        ))
    return Smi(driver_version=_value(_text(tree, "Driver Version")),
               cuda_version=_value(_text(tree, "CUDA Version")), gpus=tuple(gpus), form="text")


SEED_QUERY = ("name", "driver_version", "uuid", "memory.total")


def parse_query_csv(text: str, fields: tuple[str, ...] = SEED_QUERY) -> Smi:
    """`nvidia-smi --query-gpu=name,driver_version,uuid,memory.total --format=csv,noheader` (the
    reference deployment's check);
    with a header line (`--format=csv`) the columns are taken from it instead of `fields`."""
    rows = [[c.strip() for c in row] for row in csv.reader(io.StringIO(text)) if row and any(c.strip() for c in row)]
    if rows and rows[0] and rows[0][0] in ("name", "index") :
        fields = tuple(re.sub(r"\s*\[.*\]$", "", c) for c in rows[0])
        rows = rows[1:]
    gpus, drivers = [], set()
    for n, row in enumerate(rows):
        if len(row) != len(fields):
            raise ParseError(f"line {n + 1}: {len(row)} columns, expected {len(fields)} ({', '.join(fields)})")
        values = dict(zip(fields, row))
        if "driver_version" in values and _value(values["driver_version"]):
            drivers.add(values["driver_version"])
        memory = values.get("memory.total")
        index = _int(values.get("index"))
        gpus.append(Gpu(index=index if index is not None else n,
                        product_name=values.get("name") or "unknown",
                        memory_mib=_mib(memory if memory is None or memory.endswith("MiB") else f"{memory} MiB"),
                        uuid=_value(values.get("uuid"))))
    if len(drivers) > 1:
        raise ParseError(f"GPUs report different driver versions: {', '.join(sorted(drivers))}")
    return Smi(driver_version=next(iter(drivers), None), cuda_version=None, gpus=tuple(gpus), form="csv")


_LIST_GPU = re.compile(r"^GPU (?P<index>\d+): (?P<name>.+?) \(UUID: (?P<uuid>[^)]+)\)\s*$")
_LIST_MIG = re.compile(r"^\s+MIG (?P<profile>\S+)\s+Device\s+(?P<index>\d+): \(UUID: (?P<uuid>[^)]+)\)\s*$")


def parse_list(text: str) -> Smi:
    """`nvidia-smi -L`: each GPU, and under a MIG-enabled one each MIG device with its profile."""
    gpus: list[Gpu] = []
    devices: list[list[MigDevice]] = []
    for n, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        if m := _LIST_GPU.match(line):
            gpus.append(Gpu(index=int(m["index"]), product_name=m["name"], uuid=m["uuid"]))
            devices.append([])
        elif (m := _LIST_MIG.match(line)) and gpus:
            devices[-1].append(MigDevice(index=int(m["index"]), profile=m["profile"], uuid=m["uuid"]))
        else:
            raise ParseError(f"line {n + 1} is not a line of nvidia-smi -L: {line.strip()[:80]!r}")
    out = tuple(replace(g, mig_devices=tuple(d)) for g, d in zip(gpus, devices))
    return Smi(driver_version=None, cuda_version=None, gpus=out, form="list")


def driver_branch(version: str | None) -> int | None:
    """580 for "580.159.04"."""
    m = re.match(r"^(\d+)\.", version or "")
    return int(m.group(1)) if m else None
