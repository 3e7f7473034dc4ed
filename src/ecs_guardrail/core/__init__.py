"""Pure decision logic: event models, stop classification, crash-loop policy, availability, timeline.

Nothing here talks to AWS, reads the environment or the clock: time and state come in as arguments.
"""

__all__ = [
    "alert", "attribution", "audit", "availability", "classify", "clusters", "concurrency", "delivery",
    "entitlement", "episode", "errors", "events", "fields", "fleet_minutes", "health_json", "lifecycle", "links",
    "permissions", "policy", "records", "recount", "restarts", "restore_count", "timeline",
]
