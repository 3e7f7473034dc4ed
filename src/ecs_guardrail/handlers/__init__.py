"""One module per Lambda function: parse, load state, call core, persist, act, alert."""

__all__ = ["availability", "crash_context", "episode", "record", "runtime", "sweep", "watchdog"]
