"""An API client configured as kubectl would be: `--kubeconfig`, else `$KUBECONFIG` (a list of files,
merged), else `~/.kube/config`; `--context` picks a context; with none of those files, the in-cluster
service account. Read when called, never at import."""
from __future__ import annotations

import os
from pathlib import Path

from kubernetes import config as k8s_config
from kubernetes.client import ApiClient, Configuration


class ClusterConfigError(Exception):
    """No usable cluster configuration; the message says what was tried."""


def _kubeconfig_paths(kubeconfig: str | None) -> str | None:
    if kubeconfig:
        return kubeconfig
    listed = os.environ.get("KUBECONFIG", "")
    if any(p for p in listed.split(os.pathsep)):
        return listed
    default = Path.home() / ".kube" / "config"
    return str(default) if default.is_file() else None


def load_api_client(kubeconfig: str | None = None, context: str | None = None) -> ApiClient:
    configuration = Configuration()
    paths = _kubeconfig_paths(kubeconfig)
    try:
        if paths is not None:
            k8s_config.load_kube_config(config_file=paths, context=context, client_configuration=configuration,
                                        persist_config=False)
        elif context:
            raise ClusterConfigError(f"context {context!r} not found: no kubeconfig "
                                     "(--kubeconfig, $KUBECONFIG or ~/.kube/config)")
        elif os.environ.get("KUBERNETES_SERVICE_HOST"):
            k8s_config.load_incluster_config(client_configuration=configuration)
        else:
            raise ClusterConfigError("no cluster configuration: no kubeconfig (--kubeconfig, $KUBECONFIG or "
                                     "~/.kube/config) and not running in a cluster")
    except k8s_config.ConfigException as exc:
        raise ClusterConfigError(f"cluster configuration: {exc}") from None
    except OSError as exc:
        raise ClusterConfigError(f"cannot read kubeconfig {paths}: {exc.strerror or exc}") from None
    return ApiClient(configuration)
