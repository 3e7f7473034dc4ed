"""The replay side: a scenario folder in, a result out, never a real account.

``scenario`` reads the folder, ``fleet`` builds its fleet, ``embedded`` is the in-process AWS (moto or the
in-memory fake ``memory_aws``), ``engine`` is the one place that reads ``fast`` or ``moto``, ``run`` drives the
handlers on one clock (``clock``, ``sampling``, ``healthy_hosts``, ``restarts``, ``delivered``; ``event_checks``
for what a hand-written file earns a warning for), ``sweep`` runs a grid of settings."""

__all__ = ["clock", "delivered", "embedded", "engine", "event_checks", "fleet", "healthy_hosts", "lanes", "lines",
           "memory_aws", "restarts", "run", "sampling", "scenario", "sweep"]
