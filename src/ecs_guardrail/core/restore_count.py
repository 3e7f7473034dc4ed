"""Which desired count ``restore`` may put back, and what it trusted (pure; issue 17 item 8).

The history table's episode is the watchdog's own record of the count it replaced: trusted. When the
table has lost the episode, the service tag ``ecs-guardrail:previous-desired-count`` is the only
evidence, and anyone allowed to tag the service can write it (a tag of 5000 gave 5000 tasks). The tag
is then trusted only within a bound:

1. the service's Application Auto Scaling scalable target's ``MaxCapacity`` (DescribeScalableTargets),
   where it has one: no count above it is one the service ran at under its own scaling;
2. otherwise the highest desired count the history table recorded for the service (its decision
   records' ``previous_desired_count``); with no such record nothing bounds the tag.

A tag above its bound, or with nothing to bound it, needs the operator's ``--count N``, which is
trusted as the operator's word (and still bounded by ``MaxCapacity``, where there is one).
"""

from __future__ import annotations

from dataclasses import dataclass

from ecs_guardrail.core.errors import RestoreError

__all__ = ["TrustedCount", "choose_restore_count", "MAX_RESTORE_COUNT"]

#: the largest count ``restore --count`` takes (the CLI's parser refuses more; fleet.json's bound is the same)
MAX_RESTORE_COUNT = 10_000


@dataclass(frozen=True, slots=True)
class TrustedCount:
    """The count to restore (tasks) and ``source``: one phrase saying what was trusted and why."""

    count: int
    source: str


def choose_restore_count(where: str, *, recorded: int | None, tag: str | None, count: int | None,
                         max_capacity: int | None, history_max: int | None, tag_key: str) -> TrustedCount:
    """Decide the count ``restore`` puts back for ``where`` (``cluster/service``, for messages).

    ``recorded``: the history table episode's previous desired count (``None``: the table lost it);
    ``tag``: the value of ``tag_key`` on the service (``None``: no tag); ``count``: the operator's
    ``--count`` (``None``: not given); ``max_capacity``: the scalable target's MaxCapacity (``None``: no
    scalable target); ``history_max``: the highest desired count recorded for the service (``None``:
    none recorded).

    Raises:
        RestoreError: nothing recorded and no tag; a tag or ``--count`` that is not a count, negative
            or above MaxCapacity; a tag above the recorded history or with nothing to bound it (run
            again with ``--count``). The message says what each source said.
    """
    cap = f"the scalable target's MaxCapacity {max_capacity}"
    if count is not None:
        if count < 0:
            raise RestoreError(f"{where}: --count {count} is negative")
        if max_capacity is not None and count > max_capacity:
            raise RestoreError(f"{where}: --count {count} is above {cap}; Application Auto Scaling would not "
                               f"keep it (raise MaxCapacity first, or give a count up to "
                               f"{min(max_capacity, MAX_RESTORE_COUNT)})")
        said = [f"table {recorded}" if recorded is not None else None, f"tag {tag!r}" if tag is not None else None]
        others = ", ".join(s for s in said if s)
        return TrustedCount(count, "--count (the operator's word" + (f"; {others}" if others else "") + ")")
    if recorded is not None:
        return TrustedCount(recorded, "history table")
    if tag is None:
        raise RestoreError(f"{where}: the watchdog recorded no previous desired count (no episode in the "
                           f"history table, no tag {tag_key}); nothing to restore (give --count N to set one)")
    try:
        value = int(tag.strip())
    except (TypeError, ValueError):
        raise RestoreError(f"{where}: previous desired count {tag!r} from tag {tag_key} is not a count") from None
    if value < 0:
        raise RestoreError(f"{where}: previous desired count {value} from tag {tag_key} is negative")
    source = f"tag {tag_key}; the history table lost the episode"
    if max_capacity is not None:
        if value <= max_capacity:
            return TrustedCount(value, f"{source}; trusted within {cap}")
        raise RestoreError(f"{where}: tag {tag_key} says {value}, above {cap}: not trusted (anyone who may tag "
                           f"the service can write it); run restore again with --count N "
                           f"(N <= {min(max_capacity, MAX_RESTORE_COUNT)})")
    if history_max is not None and value <= history_max:
        return TrustedCount(value, f"{source}; trusted within the highest desired count recorded for the "
                                   f"service ({history_max}); it has no scalable target")
    recorded_text = (f"the highest desired count recorded for it is {history_max}" if history_max is not None
                     else "the history table recorded no desired count for it")
    confirm = (f"run restore again with --count {value} to confirm it, or with the count you want"
               if 1 <= value <= MAX_RESTORE_COUNT else
               f"run restore again with --count N, the count you want (1 to {MAX_RESTORE_COUNT:,}; {value} is "
               "not one restore sets)")
    raise RestoreError(f"{where}: tag {tag_key} says {value}, but the service has no scalable target and "
                       f"{recorded_text}: the tag is not trusted (anyone who may tag the service can write it); "
                       f"{confirm}")
