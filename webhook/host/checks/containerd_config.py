"""host-containerd-config: containerd's root config and its drop-ins can be used.

Every cohort. Fit: the root config and every drop-in it imports were read and parse. Not fit: a drop-in is not
TOML (containerd refuses to start on it); a drop-in of a config version above the root's on containerd 2.3+, which
refuses to start on one. Unknown: the config cannot be read (absent, or not readable without root), a drop-in
cannot be read, or containerd's version cannot be told while a newer drop-in is there."""
from __future__ import annotations

from webhook.host.checks.finding import Findings, HostCheckId, HostFinding, HostInput, Status, containerd_fix
from webhook.host.sources import Missing
from webhook.host.toolkit import dotted
from webhook.policy.messages import Arg, T

ID = HostCheckId.CONTAINERD
DROP_IN_VERSION_CHECKED = (2, 3)  # refuses drop-ins of a config version above the root's


def check(host: HostInput) -> Findings:
    c = host.facts.containerd
    if isinstance(c, Missing):
        return (host.finding(ID, Status.UNKNOWN, "host", T("cannot read containerd's configuration"), c.reason,
                             containerd_fix(c)),)
    found: list[HostFinding] = [
        host.finding(ID, Status.FAIL if "not valid TOML" in error else Status.UNKNOWN, "host",
                     T("a containerd drop-in cannot be used"), error,
                     T("fix or remove the file (containerd refuses to start on a drop-in that does not parse), or "
                       "run as root to read it"))
        for error in c.errors]
    newer = c.newer_drop_ins()
    if newer:
        cv = host.facts.containerd_version
        detail = ", ".join(f"{f.path} (version {f.version})" for f in newer)
        root: dict[str, Arg] = {"path": c.files[0].path, "version": str(c.files[0].version)}
        fix = T("rewrite the drop-in in the root's version (nvidia-ctk with RUNTIME_CONFIG_SOURCE=file reads the root "
                "file)")
        what = T("drop-ins of a newer config version: {files}", files=detail)
        if isinstance(cv, Missing):
            found.append(host.finding(ID, Status.UNKNOWN, "host", what,
                                      T("the root config {path} is version {version}; containerd {checked}+ refuses "
                                        "to start on them, and its version cannot be read ({reason})", **root,
                                        checked=dotted(DROP_IN_VERSION_CHECKED), reason=cv.reason), fix))
        elif cv >= DROP_IN_VERSION_CHECKED:
            found.append(host.finding(ID, Status.FAIL, "host", what,
                                      T("the root config {path} is version {version}, and containerd {containerd} "
                                        "refuses to start on a drop-in above the root's version", **root,
                                        containerd=dotted(cv)), fix))
    if not found:
        files = ", ".join(f.path for f in c.files)
        found.append(host.finding(ID, Status.PASS, "host", T("containerd configuration read: {files}", files=files)))
    return tuple(found)
