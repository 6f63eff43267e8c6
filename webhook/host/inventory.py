"""`host inventory`: each GPU and each GPU model's MIG profile table, as JSON-ready values and as text.

Identifiers (UUIDs, serial numbers, PCI bus ids) only when asked: hardware diagnostics stay private."""
from __future__ import annotations

from webhook.config.mig import MIG_PROFILE_TABLES
from webhook.host import mig
from webhook.host.facts import HostFacts
from webhook.host.nvsmi import FORMS, Gpu, MigDevice
from webhook.host.sources import Missing
from webhook.policy.messages import Arg, T, render


def _mig_devices(gpu: Gpu, facts: HostFacts, show_ids: bool) -> list[dict] | None:
    listed: tuple[MigDevice, ...] | None = None
    if not isinstance(facts.listing, Missing):
        listed = next((g.mig_devices for g in facts.listing.gpus if g.index == gpu.index), None)
    devices = listed if listed is not None else gpu.mig_devices
    if devices is None:
        return None
    sized = {d.index: d.memory_mib for d in gpu.mig_devices or ()}
    out = []
    for d in devices:
        item: dict = {"index": d.index, "profile": d.profile, "memoryMiB": d.memory_mib or sized.get(d.index)}
        if show_ids and d.uuid:
            item["uuid"] = d.uuid
        out.append(item)
    return out


def gpu_dict(gpu: Gpu, facts: HostFacts, show_ids: bool) -> dict:
    out: dict = {
        "index": gpu.index,
        "productName": gpu.product_name,
        "memoryMiB": gpu.memory_mib,
        "migCapable": gpu.mig_capable,
        "migMode": {"current": gpu.mig_current, "pending": gpu.mig_pending},
        "persistenceMode": gpu.persistence_mode,
        "computeMode": gpu.compute_mode,
        "migDevices": _mig_devices(gpu, facts, show_ids),
    }
    if show_ids:
        out.update(uuid=gpu.uuid, serial=gpu.serial, busId=gpu.bus_id)
    return out


def builtin_model(profiles: dict[str, int]) -> str | None:
    """The shipped table (`mig: {model: ...}`) equal to this one, if any."""
    return next((name for name, table in MIG_PROFILE_TABLES.items() if dict(table) == profiles), None)


def models(facts: HostFacts) -> list[dict]:
    """One entry per GPU model: its GPUs and its MIG profile table in the shape of a cohort's `mig:`."""
    if isinstance(facts.smi, Missing):
        return []
    per_gpu = {} if isinstance(facts.profiles, Missing) else mig.tables(facts.profiles)
    out: dict[tuple[str, int | None], dict] = {}
    for gpu in facts.smi.gpus:
        entry = out.setdefault((gpu.product_name, gpu.memory_mib), {
            "productName": gpu.product_name, "memoryMiB": gpu.memory_mib, "gpus": [], "mig": None,
            "builtinModel": None, "profilesLeftOut": [], "migTableUnknown": None})
        entry["gpus"].append(gpu.index)
        if gpu.mig_capable is False:
            entry["migTableUnknown"] = "the GPU has no MIG"
            continue
        table = per_gpu.get(gpu.index)
        if table is None:
            entry["migTableUnknown"] = (facts.profiles.reason if isinstance(facts.profiles, Missing) else
                                        f"nvidia-smi mig -lgip listed no profile for GPU {gpu.index}"
                                        + (f" ({facts.profiles_text.splitlines()[0]})" if facts.profiles_text else ""))
            continue
        kept, left_out = mig.policy_table(table)
        if entry["mig"] is not None and entry["mig"]["profiles"] != kept:
            entry["migTableUnknown"] = f"GPUs of this model list different profile tables (GPU {gpu.index} differs)"
            continue
        entry.update(mig={"profiles": kept}, builtinModel=builtin_model(kept), profilesLeftOut=list(left_out))
        entry["migTableUnknown"] = None
    return list(out.values())


def inventory(facts: HostFacts, *, show_ids: bool = False, language: str = "en") -> dict:
    """The JSON-ready inventory; `source` names the host in `language` (English in JSON output)."""
    smi = facts.smi
    return {
        "source": render(facts.where, language),
        "readFrom": None if isinstance(smi, Missing) else smi.form,
        "driverVersion": None if isinstance(smi, Missing) else smi.driver_version,
        "cudaVersion": None if isinstance(smi, Missing) else smi.cuda_version,
        "gpus": [] if isinstance(smi, Missing) else [gpu_dict(g, facts, show_ids) for g in smi.gpus],
        "models": models(facts),
        "notes": list(facts.notes),
        "errors": [smi.reason] if isinstance(smi, Missing) else [],
    }


def text(inv: dict, language: str = "en") -> list[str]:
    """The report a person reads, in `language`; values, names and the nvidia-smi/tool reasons stay as read."""
    def say(value: Arg) -> str:
        return render(value, language)

    def mode(value) -> str:
        return say(T("unknown")) if value is None else str(value)

    lines = [say(T("Host: {source}", source=inv["source"]))]
    if inv["errors"]:
        return lines + [say(T("cannot read the GPUs: {reason}", reason=e)) for e in inv["errors"]]
    lines.append(say(T("Driver {driver}, CUDA {cuda} (read from `{form}`)", driver=mode(inv["driverVersion"]),
                     cuda=mode(inv["cudaVersion"]), form=FORMS[inv["readFrom"]])))
    lines.extend(say(T("note: {note}", note=n)) for n in inv["notes"])
    for g in inv["gpus"]:
        memory = (say(T("{mib} MiB ({gib} GiB)", mib=g["memoryMiB"], gib=f"{g['memoryMiB'] / 1024:.1f}"))
                  if g["memoryMiB"] is not None else say(T("memory unknown")))
        lines.append("")
        lines.append(f"GPU {g['index']}: {g['productName']}, {memory}")
        if "uuid" in g:
            lines.append("    " + say(T("uuid {uuid}, serial {serial}, bus {bus}", uuid=mode(g["uuid"]),
                                      serial=mode(g["serial"]), bus=mode(g["busId"]))))
        capable = {True: T("capable"), False: T("not capable"), None: T("capability unknown")}[g["migCapable"]]
        mig_line = "    " + say(T("MIG: {capable}", capable=capable))
        if g["migCapable"]:
            mig_line += say(T(", current {current}, pending {pending}", current=mode(g["migMode"]["current"]),
                            pending=mode(g["migMode"]["pending"])))
        lines.append(mig_line)
        lines.append("    " + say(T("persistence mode {persistence}, compute mode {compute}",
                                  persistence=mode(g["persistenceMode"]), compute=mode(g["computeMode"]))))
        for d in g["migDevices"] or ():
            lines.append("    " + say(T("MIG device {index}: {profile}", index=d["index"],
                                      profile=d["profile"] or T("profile unknown")))
                         + (f", {d['memoryMiB']} MiB" if d["memoryMiB"] else "")
                         + (f", {d['uuid']}" if d.get("uuid") else ""))
    for m in inv["models"]:
        lines.append("")
        gpus = ", ".join(map(str, m["gpus"]))
        if m["mig"] is None:
            lines.append(say(T("MIG profile table of {model} (GPU {gpus}): unknown, {reason}", model=m["productName"],
                             gpus=gpus, reason=m["migTableUnknown"])))
            continue
        lines.append(say(T("MIG profile table of {model} (GPU {gpus}), from nvidia-smi mig -lgip; the same as the "
                         "built-in {builtin} (mig: {{model: {builtin}}}); as a cohort's table:", model=m["productName"],
                         gpus=gpus, builtin=m["builtinModel"])) if m["builtinModel"] else
                     say(T("MIG profile table of {model} (GPU {gpus}), from nvidia-smi mig -lgip; as a cohort's table:",
                         model=m["productName"], gpus=gpus)))
        lines.append("    mig:")
        lines.append("      profiles:")
        lines.extend(f"        {name}: {count}" for name, count in m["mig"]["profiles"].items())
        if m["profilesLeftOut"]:
            lines.append("    " + say(T("left out (not a name the policy takes): {profiles}",
                                      profiles=", ".join(m["profilesLeftOut"]))))
    return lines
