"""The Lambda functions and what they share: parse, load state, call core, persist, act, alert.

Four modules are Lambda entry points (``template.yaml`` and ``terraform/main.tf`` name their ``handler``):
``record`` (the recorder), ``watchdog`` (the watchdog), ``lane`` (the sweep function: the scheduled recovery
sweep and the restart observations in their own lane, issue 32) and ``availability`` (the sampler). The others
are not Lambdas: ``episode`` interprets an episode's effects for the watchdog and the sweep, ``performers`` performs
each effect (declaring its AWS actions), ``episode_job`` what one run carries, ``probe`` its probe
steps (``RECOVERY=probe``), ``runtime`` builds the settings and adapters every handler uses, ``channels`` the
alert routes' channels, ``crash_context`` a decision alert's crash lines and change, ``deployment_failed`` the
failed deployment alert, ``decision`` a trigger's decision recipe (rules 2 to 5), ``hold`` rule 2 over a service
held at zero, ``slots`` rule 5's slot freeing, ``jobs`` the standalone jobs' alerts, ``outbox`` the alerts' places,
reads and delivery, ``folds`` the episode writes folded into one (issue 33 item 6), ``unreadable`` what is said
of a service whose own stored summary cannot be read (docs/runbook.md), and ``sweep`` is the recovery sweep
(not ``replay --sweep``'s settings grid, which is :mod:`ecs_guardrail.replay.settings_sweep`).
"""

__all__ = ["availability", "channels", "crash_context", "decision", "deployment_failed", "episode", "episode_job",
           "folds", "hold", "jobs", "lane", "outbox", "performers", "probe", "record", "runtime", "slots", "sweep",
           "unreadable", "watchdog"]
