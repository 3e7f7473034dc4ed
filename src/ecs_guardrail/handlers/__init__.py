"""One module per Lambda function: parse, load state, call core, persist, act, alert."""

__all__ = ["record", "watchdog", "availability"]
