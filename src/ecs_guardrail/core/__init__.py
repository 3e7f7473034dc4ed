"""Pure decision logic: event models, stop classification, crash-loop policy, availability, timeline.

Nothing here talks to AWS, reads the environment or the clock: time and state come in as arguments.
"""

__all__ = [
    "alert", "attribution", "audit", "availability", "classify", "clusters", "concurrency", "crash_words",
    "decision_facts", "delivery", "deployment_failure", "deployment_protection", "entitlement", "enum_text",
    "errors", "events", "fleet_minutes", "health_json", "lazy", "lifecycle", "links", "org", "permissions", "policy",
    "records", "recount", "restarts", "restore_count", "routes", "silence", "structs", "summary", "timeline",
]
