"""MIG GPU-instance profile tables per GPU model: profile -> maximum instances of that profile.

A100-40GB is the reference deployment's table; H200-141GB was read from a real host (`nvidia-smi mig -lgip`,
shared/fixtures/nvidia-smi-h200/mig-lgip.txt). Other models: give `mig.profiles` in the policy.
"""
import re
from types import MappingProxyType

# A profile name the policy takes: the device plugin advertises `nvidia.com/mig-<profile>` for it (with "+me"
# folded into the plain profile's name).
PROFILE_NAME = re.compile(r"^\d+g\.\d+gb(\+me)?$")

MIG_PROFILE_TABLES = MappingProxyType({
    "A100-40GB": MappingProxyType({"1g.5gb": 7, "2g.10gb": 3, "3g.20gb": 2, "4g.20gb": 1, "7g.40gb": 1}),
    "H200-141GB": MappingProxyType({
        "1g.18gb": 7, "1g.18gb+me": 1, "1g.35gb": 4, "2g.35gb": 3, "3g.71gb": 2, "4g.71gb": 1, "7g.141gb": 1,
    }),
})
