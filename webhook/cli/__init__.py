"""The `gpu-admission` command line."""
