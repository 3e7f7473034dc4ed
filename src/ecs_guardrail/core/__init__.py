"""Pure decision logic: event models, stop classification, crash-loop policy, availability, timeline.

Nothing here talks to AWS, reads the environment or the clock: time and state come in as arguments.
"""

__all__ = ["errors", "events", "classify", "policy", "entitlement", "availability", "attribution", "timeline"]
