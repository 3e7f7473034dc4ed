"""The CLI reference (docs/cli.md) and the README's exit-status table, generated from the parser.

``python -m ecs_guardrail.cli_reference > docs/cli.md`` rewrites the reference;
``python -m ecs_guardrail.cli_reference --bash-completion`` prints a bash completion script (commands,
options, and the choices of an option; ``source <(...)`` or save it under
``~/.local/share/bash-completion/completions/ecs-guardrail``);
``tests/unit/test_cli_reference.py`` fails when docs/cli.md or the README's table drifts from
:func:`ecs_guardrail.cli.build_parser` and :data:`ecs_guardrail.cli.EXIT_CODES`.
"""

from __future__ import annotations

import argparse

from ecs_guardrail.cli import EXIT_CODES, EXIT_COMMON, build_parser

__all__ = ["exit_status_table", "reference", "bash_completion"]


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
        if name == "audit":
            out += _health_json_example()
    out += ["## Every command", ""]
    out += [f"- **{code}** {meaning}" for code, meaning in sorted(EXIT_COMMON.items())]
    return "\n".join(out) + "\n"


#: the outage's saved /actuator/health response (an Elasticsearch indicator DOWN, the database UP)
HEALTH_EXAMPLE = "events/health/actuator-outage.json"


def _health_json_example() -> list[str]:
    """``audit --health-json`` on the outage's response: the real output, generated with the reference."""
    import io
    from pathlib import Path

    from ecs_guardrail.app.health_json import audit_health_json, render

    root = Path(__file__).resolve().parents[2]
    report = audit_health_json(root / HEALTH_EXAMPLE)
    buffer = io.StringIO()
    render(report, "text", buffer, "high", HEALTH_EXAMPLE)
    return ["The outage's health response (`/actuator/health` saved to a file: one shared dependency,",
            "Elasticsearch, DOWN while the database is UP, and every task's load-balancer check answered 503):",
            "", "```", f"$ ecs-guardrail audit --health-json {HEALTH_EXAMPLE}", buffer.getvalue().rstrip(),
            f"$ echo $?\n{report.exit_status('high')}", "```", ""]


def bash_completion() -> str:
    """A bash completion script for ``ecs-guardrail``, generated from the parser (no dependency):
    the command first, then its options; after an option with choices, those choices; after an option
    taking a value, file names; elsewhere options and folders."""
    subs = _subcommands(build_parser())
    cases = []
    for name, sub in subs.items():
        options = " ".join(o for a in sub._actions for o in a.option_strings)
        lines = [f"    {name})", '      case "$prev" in']
        for a in sub._actions:
            if a.option_strings and a.choices:
                words = " ".join(map(str, a.choices))
                lines.append(f'        {"|".join(a.option_strings)}) COMPREPLY=($(compgen -W "{words}" -- "$cur")); '
                             "return ;;")
        takes_value = [o for a in sub._actions if a.option_strings and a.nargs != 0 and not a.choices
                       for o in a.option_strings]
        if takes_value:
            lines.append(f'        {"|".join(takes_value)}) COMPREPLY=($(compgen -f -- "$cur")); return ;;')
        lines += ["      esac",
                  f'      COMPREPLY=($(compgen -W "{options}" -- "$cur"))',
                  '      [[ $cur != -* ]] && COMPREPLY+=($(compgen -d -- "$cur"))',
                  "      ;;"]
        cases.append("\n".join(lines))
    head = [
        "# bash completion for ecs-guardrail: python -m ecs_guardrail.cli_reference --bash-completion",
        "_ecs_guardrail() {",
        '  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd=${COMP_WORDS[1]}',
        "  if [[ $COMP_CWORD -eq 1 ]]; then",
        f'    COMPREPLY=($(compgen -W "{" ".join(subs)} --help --version" -- "$cur")); return',
        "  fi",
        '  case "$cmd" in',
    ]
    return "\n".join([*head, *cases, "  esac", "}", "complete -F _ecs_guardrail ecs-guardrail", ""])


if __name__ == "__main__":  # pragma: no cover
    import sys

    sys.stdout.write(bash_completion() if sys.argv[1:] == ["--bash-completion"] else reference())
