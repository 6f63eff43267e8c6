"""host-cdi-runtime: containerd injects CDI devices.

DRA cohorts. Fit: the CRI plugin sets enable_cdi = true, or containerd is 2.0+ (CDI on by default). Not fit:
enable_cdi = false; containerd older than 1.7 (no CDI at all); containerd 1.7 without enable_cdi. Unknown: the
config cannot be read, or enable_cdi is not set and containerd's version cannot be read."""
from __future__ import annotations

from webhook.config.model import DRA
from webhook.host.checks.finding import Findings, HostCheckId, HostInput, Status, containerd_fix
from webhook.host.sources import Missing
from webhook.host.toolkit import dotted
from webhook.policy.messages import T

ID = HostCheckId.CDI_RUNTIME
CDI_CONTAINERD = (1, 7)  # the first containerd whose CRI plugin injects CDI devices (enable_cdi)
CDI_ON_BY_DEFAULT = (2, 0)


def check(host: HostInput) -> Findings:
    if host.cohort.mechanism != DRA:
        return ()
    c, cv = host.facts.containerd, host.facts.containerd_version
    if isinstance(c, Missing):
        return (host.finding(ID, Status.UNKNOWN, "host", T("cannot tell whether containerd injects CDI devices"),
                             c.reason, containerd_fix(c)),)
    setting = c.enable_cdi
    fix = T('set enable_cdi = true in the CRI plugin\'s table (plugins."io.containerd.grpc.v1.cri" in a version 2 '
            "config) and restart containerd")
    if setting is False:
        return (host.finding(ID, Status.FAIL, "host", T("containerd's CRI plugin sets enable_cdi = false"),
                             T("the DRA driver needs a CDI-capable runtime"), fix),)
    if isinstance(cv, Missing):
        if setting:
            return (host.finding(ID, Status.PASS, "host", T("containerd's CRI plugin sets enable_cdi = true"),
                                 T("(its version could not be read: {reason})", reason=cv.reason)),)
        return (host.finding(ID, Status.UNKNOWN, "host", T("enable_cdi is not set and containerd's version "
                             "cannot be read"),
                             T("containerd turns CDI on by default from 2.0 only ({reason})", reason=cv.reason),
                             T("capture `containerd --version`, or set enable_cdi = true")),)
    version = dotted(cv)
    if cv < CDI_CONTAINERD:
        return (host.finding(ID, Status.FAIL, "host", T("containerd {version} has no CDI support", version=version),
                             T("CDI device injection arrived in containerd {first}", first=dotted(CDI_CONTAINERD)),
                             T("upgrade containerd to 1.7+ (2.x turns CDI on by default)")),)
    if setting or cv >= CDI_ON_BY_DEFAULT:
        return (host.finding(ID, Status.PASS, "host", T("containerd {version} injects CDI devices", version=version),
                             "enable_cdi = true" if setting else T("on by default since 2.0")),)
    return (host.finding(ID, Status.FAIL, "host", T("containerd {version} leaves CDI off", version=version),
                         T("enable_cdi defaults to false before containerd 2.0, and the DRA driver needs a "
                           "CDI-capable runtime"), fix),)
