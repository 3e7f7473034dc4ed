"""The replay side: a scenario folder in, a result out, never a real account.

``scenario`` reads the folder, ``fleet`` builds its fleet, ``embedded`` is the in-process AWS (moto or the
in-memory fake ``memory_aws``), ``engine`` is the one place that reads ``fast`` or ``moto``, ``run`` drives the
handlers on one clock (``clock``, ``sampling``, ``healthy_hosts``, ``restarts``, ``delivered``; ``event_checks``
for what a hand-written file earns a warning for; ``logs_file`` puts ``logs.jsonl`` into the embedded CloudWatch
Logs; ``deployments`` keeps the deployment a rolling deployment replaces in DescribeServices),
``settings_sweep`` runs a grid of settings (``replay --sweep``; the recovery sweep that runs on a schedule
is :mod:`ecs_guardrail.handlers.sweep`), ``parallel`` runs partitions by cluster (and a sweep's settings) in
processes or on a Dask cluster (``replay --jobs``)."""

__all__ = ["clock", "delivered", "deployments", "embedded", "engine", "event_checks", "fleet", "healthy_hosts",
           "lanes", "lines", "logs_file", "memory_aws", "parallel", "restarts", "run", "sampling", "scenario",
           "settings_sweep"]
