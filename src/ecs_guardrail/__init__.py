"""ecs-guardrail: a crash-loop watchdog for Amazon ECS fleets that knows when not to act."""

__all__ = ["__version__"]
__version__ = "0.1.0"
