"""One module per Lambda function: parse, load state, call core, persist, act, alert."""

__all__ = ["availability", "channels", "crash_context", "deployment_failed", "episode", "record", "runtime", "sweep",
           "watchdog"]
