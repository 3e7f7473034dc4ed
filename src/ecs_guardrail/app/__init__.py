"""The operator wing: one module per command (``audit``, ``timeline``, ``capture``, ``restore``), and what
their output needs (``report``, ``plot``, ``progress``, ``replay_output`` for what ``replay`` writes;
``health_json`` for ``audit --health-json``). Never imported by a Lambda handler."""

__all__ = ["audit", "capture", "health_json", "org_silence", "plot", "progress", "replay_output", "report", "restore",
           "timeline"]
