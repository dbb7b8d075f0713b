"""Settings modules: ``base`` (local defaults from the environment) and ``production``."""
