"""Pure decision logic: event models, stop classification, crash-loop policy, availability, timeline.

Nothing here talks to AWS, reads the environment or the clock: time and state come in as arguments.
"""

__all__ = [
    "alert", "attribution", "audit", "availability", "classify", "clusters", "delivery", "deployment_protection",
    "entitlement", "errors", "events", "fleet_minutes", "health_json", "lifecycle", "links", "permissions",
    "policy", "records", "restarts", "restore_count", "summary", "timeline",
]
