"""ecs-guardrail: a crash-loop watchdog for Amazon ECS fleets that knows when not to act."""

__all__ = ["__version__"]
__version__ = "0.1.0"

# the Lambda zip's compiled dataclass methods, when it ships them (issue 33 item 7; nothing elsewhere)
from ecs_guardrail.core.dataclass_code import install as _install_dataclass_code  # noqa: E402

_install_dataclass_code()
