"""gpu-admission: admission policy for NVIDIA GPU node cohorts."""
