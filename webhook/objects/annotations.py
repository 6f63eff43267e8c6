"""Annotation keys that grant devices: CDI and NRI device injection read them off a pod's metadata."""
from __future__ import annotations

# A pod annotated with one of these gets devices injected by the runtime, outside the scheduler's accounting.
ANNOTATION_PREFIXES = ("cdi.k8s.io/", "nvidia.cdi.k8s.io/", "cdi-devices.nri.io/")
