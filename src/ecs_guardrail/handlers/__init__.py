"""One module per Lambda function: parse, load state, call core, persist, act, alert."""

__all__ = ["availability", "channels", "deployment_failed", "episode", "record", "runtime", "sweep", "watchdog"]
