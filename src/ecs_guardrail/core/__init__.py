"""Pure decision logic: event models, stop classification, crash-loop policy, availability, timeline.

Nothing here talks to AWS, reads the environment or the clock: time and state come in as arguments.
"""

__all__ = [
    "alert", "attribution", "audit", "availability", "classify", "clusters", "crash_words", "delivery",
    "deployment_failure", "entitlement", "episode", "errors", "events", "fields", "fleet_minutes", "health_json",
    "lazy", "lifecycle", "links", "org", "permissions", "policy", "records", "restarts", "restore_count", "routes",
    "silence", "timeline",
]
