"""The operator wing: one module per command (``audit``, ``timeline``, ``capture``, ``restore``), and what
their output needs (``report``, ``plot``, ``progress``). Never imported by a Lambda handler."""

__all__ = ["audit", "capture", "plot", "progress", "report", "restore", "timeline"]
