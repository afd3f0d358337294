"""The one error type a configuration problem raises."""


class ConfigError(ValueError):
    """Invalid configuration; the message names the offending key path or flag."""
