"""The Lambda functions and what they share: parse, load state, call core, persist, act, alert.

Three modules are Lambda entry points (``template.yaml`` and ``terraform/main.tf`` name their ``handler``):
``record`` (the recorder), ``watchdog`` (the watchdog, which also runs ``sweep``, the scheduled recovery sweep, on
the sampler's one-minute schedule) and ``availability`` (the sampler). The others are not Lambdas:
``episode`` performs an episode's effects for the watchdog and the sweep, ``probe`` its probe steps
(``RECOVERY=probe``), ``runtime`` builds the settings and adapters every handler uses, ``channels`` the alert
routes' channels, ``crash_context`` a decision alert's crash lines and change, ``deployment_failed`` the failed
deployment alert, and ``sweep`` is the recovery sweep (not ``replay --sweep``'s settings grid, which is
:mod:`ecs_guardrail.replay.settings_sweep`).
"""

__all__ = ["availability", "channels", "crash_context", "deployment_failed", "episode", "probe", "record", "runtime",
           "sweep", "watchdog"]
