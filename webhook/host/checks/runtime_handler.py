"""host-runtime-handler: containerd has the runtime handler the cohort's RuntimeClass names.

Device-plugin cohorts (the handler is `--handler`, else the cohort's runtimeClassName, else nvidia). Fit: the
handler exists and its options.BinaryName runs nvidia-container-runtime. Not fit: no such handler (a RuntimeClass
name alone configures nothing), or a handler with no BinaryName (containerd then runs plain runc). Unknown: the
config cannot be read, a drop-in could not be read and the handler is not in the rest, or the handler runs another
binary (a wrapper, perhaps)."""
from __future__ import annotations

from webhook.config.model import DRA
from webhook.host.checks.finding import Findings, HostCheckId, HostInput, Status, containerd_fix, quoted
from webhook.host.sources import Missing
from webhook.policy.messages import T

ID = HostCheckId.HANDLER
CONFIGURE_CONTAINERD = "sudo nvidia-ctk runtime configure --runtime=containerd && sudo systemctl restart containerd"


def check(host: HostInput) -> Findings:
    if host.cohort.mechanism == DRA:
        return ()
    c, handler = host.facts.containerd, host.handler
    if isinstance(c, Missing):
        return (host.finding(ID, Status.UNKNOWN, "host", T("cannot tell whether containerd has the {handler} runtime "
                             "handler", handler=quoted(handler)), c.reason, containerd_fix(c)),)
    found = c.runtime(handler)
    if found is None:
        if c.errors:
            return (host.finding(ID, Status.UNKNOWN, "host", T("no {handler} runtime handler in the readable "
                                 "containerd configuration", handler=quoted(handler)),
                                 T("some drop-ins could not be read: {errors}", errors="; ".join(c.errors)),
                                 T("run as root so that every drop-in is read")),)
        return (host.finding(ID, Status.FAIL, "host",
                             T("containerd has no {handler} runtime handler (read {files})", handler=quoted(handler),
                               files=", ".join(f.path for f in c.files)),
                             T("the cohort's RuntimeClass must be backed by a configured containerd handler "
                               "{handler}; a RuntimeClass name alone configures nothing, and its pods fail with 'no "
                               "runtime for {handler} is configured'", handler=quoted(handler)),
                             T("configure it: `{command}`", command=CONFIGURE_CONTAINERD)),)
    runtime, where = found
    if runtime.binary_name is None:
        return (host.finding(ID, Status.FAIL, "host", T("runtime handler {handler} in {path} names no "
                             "options.BinaryName", handler=quoted(handler), path=where.path),
                             T("containerd then runs plain runc for it, which injects no GPU"),
                             T("reconfigure it: `{command}`", command=CONFIGURE_CONTAINERD)),)
    runs = T("runtime handler {handler} in {path} runs {binary}", handler=quoted(handler), path=where.path,
             binary=runtime.binary_name)
    if "nvidia-container-runtime" not in runtime.binary_name:
        return (host.finding(ID, Status.UNKNOWN, "host", runs,
                             T("that is not the NVIDIA Container Runtime; only a wrapper around it injects GPUs"),
                             T("confirm it wraps nvidia-container-runtime, or reconfigure with nvidia-ctk")),)
    return (host.finding(ID, Status.PASS, "host", runs),)
