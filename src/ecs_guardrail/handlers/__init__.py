"""One module per Lambda function: parse, load state, call core, persist, act, alert."""

__all__ = ["availability", "episode", "lane", "record", "runtime", "sweep", "watchdog"]
