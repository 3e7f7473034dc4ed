"""The CLI reference (docs/cli.md) and the README's exit-status table, generated from the parser.

``python -m ecs_guardrail.cli_reference > docs/cli.md`` rewrites the reference;
``tests/unit/test_cli_reference.py`` fails when docs/cli.md or the README's table drifts from
:func:`ecs_guardrail.cli.build_parser` and :data:`ecs_guardrail.cli.EXIT_CODES`.
"""

from __future__ import annotations

import argparse

from ecs_guardrail.cli import EXIT_CODES, EXIT_COMMON, build_parser

__all__ = ["exit_status_table", "reference"]


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def exit_status_table() -> str:
    """Markdown: one row per command and status, then the statuses every command shares."""
    rows = ["| command | status | meaning |", "| --- | --- | --- |"]
    for command, codes in EXIT_CODES.items():
        rows += [f"| `{command}` | **{code}** | {meaning} |" for code, meaning in sorted(codes.items())]
    rows += [f"| every command | **{code}** | {meaning} |" for code, meaning in sorted(EXIT_COMMON.items())]
    return "\n".join(rows) + "\n"


def _option(a: argparse.Action) -> str:
    names = ", ".join(f"`{n}`" for n in a.option_strings) or f"`{a.metavar or a.dest}`"
    if a.option_strings and a.nargs != 0:
        names += f" {a.metavar or a.dest.upper()}"
    extra = []
    if a.choices and not isinstance(a, argparse._SubParsersAction):
        extra.append("one of " + ", ".join(f"`{c}`" for c in a.choices))
    if a.required and a.option_strings:
        extra.append("required")
    return f"- {names}: {a.help}" + (f" ({'; '.join(extra)})" if extra else "")


def reference() -> str:
    """docs/cli.md: every command, its options (with their help), and its exit statuses."""
    parser = build_parser()
    out = ["# ecs-guardrail command reference", "",
           "Generated from the parser by `python -m ecs_guardrail.cli_reference > docs/cli.md`: do not edit by "
           "hand (tests/unit/test_cli_reference.py fails when it drifts).", ""]
    for name, sub in _subcommands(parser).items():
        # a fixed width: the reference must not depend on the terminal it was generated in
        usage = argparse.HelpFormatter(sub.prog, width=100)
        usage.add_usage(sub.usage, sub._actions, sub._mutually_exclusive_groups, prefix="")
        out += [f"## {name}", "", "```", usage.format_help().strip(), "```", ""]
        out += [_option(a) for a in sub._actions if not isinstance(a, argparse._HelpAction)]
        out += ["", "Exit status:", ""]
        out += [f"- **{code}** {meaning}" for code, meaning in sorted(EXIT_CODES[name].items())]
        out.append("")
    out += ["## Every command", ""]
    out += [f"- **{code}** {meaning}" for code, meaning in sorted(EXIT_COMMON.items())]
    return "\n".join(out) + "\n"


if __name__ == "__main__":  # pragma: no cover
    import sys

    sys.stdout.write(reference())
