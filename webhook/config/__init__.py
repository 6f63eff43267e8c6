"""Policy configuration: frozen model, loader and the shipped default."""
from webhook.config.load import ConfigError, default_policy, load_layers, load_policy, parse_policy
from webhook.config.model import Cohort, Policy

__all__ = ["Cohort", "ConfigError", "Policy", "default_policy", "load_layers", "load_policy", "parse_policy"]
