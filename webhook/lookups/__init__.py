"""Where the engine's context comes from: the input bundle (CLI), the config alone, or the cluster."""
