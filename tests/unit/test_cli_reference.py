"""docs/cli.md and the README's exit-status table are generated from the parser and EXIT_CODES: they
cannot drift (issue 24 items 2 and 14)."""

from __future__ import annotations

import argparse
import re

from ecs_guardrail import cli
from ecs_guardrail.cli_reference import exit_status_table, reference
from tests.conftest import ROOT


def test_docs_cli_md_is_the_generated_reference():
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == reference(), (
        "docs/cli.md drifted: python -m ecs_guardrail.cli_reference > docs/cli.md")


def test_the_readme_exit_status_table_is_the_generated_one():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- exit-status:begin[^>]*-->\n(.*?)<!-- exit-status:end -->", text, re.S)
    assert m is not None, "README.md lost its exit-status block"
    assert m.group(1) == exit_status_table()


def test_every_command_has_its_exit_statuses():
    action = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert sorted(action.choices) == sorted(cli.EXIT_CODES)
    for codes in cli.EXIT_CODES.values():
        assert cli.EXIT_OK in codes and cli.EXIT_BAD_INPUT in codes
    # only audit and restore answer "no" with 1; the commands that ask AWS say 3 when they could not
    assert [c for c, codes in cli.EXIT_CODES.items() if cli.EXIT_NO in codes] == ["restore", "audit"]
    assert [c for c, codes in cli.EXIT_CODES.items() if cli.EXIT_AWS not in codes] == ["replay"]


def _complete(script: str, *words: str) -> list[str]:
    import subprocess

    line = " ".join(f"'{w}'" for w in words)
    cmd = (f"{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _ecs_guardrail; "
           'printf "%s\\n" "${COMPREPLY[@]}"')
    proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=60, check=True)
    return [w for w in proc.stdout.splitlines() if w]


def test_bash_completion_is_generated_from_the_parser():
    from ecs_guardrail.cli_reference import bash_completion

    script = bash_completion()
    assert _complete(script, "ecs-guardrail", "re") == ["replay", "restore"]
    assert _complete(script, "ecs-guardrail", "replay", "--engine", "") == ["fast", "moto"]
    assert _complete(script, "ecs-guardrail", "audit", "--fail-on", "") == ["high", "medium", "never"]
    assert set(_complete(script, "ecs-guardrail", "audit", "--f")) == {"--format", "--fail-on"}


def test_make_help_lists_every_target_with_its_description():
    import shutil
    import subprocess

    if shutil.which("make") is None:
        import pytest

        pytest.skip("no make on PATH")
    out = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         check=True).stdout
    listed = {line.split()[1] for line in out.splitlines() if line.startswith("  make ")}
    texts = [(ROOT / "Makefile").read_text(), *(p.read_text() for p in sorted((ROOT / "mk").glob("*.mk")))]
    targets = {m for t in texts for m in re.findall(r"^([a-z][a-z-]*):", t, re.M)}
    assert targets - listed == set(), "targets without a '## ' description line above them"
    assert {"run", "test", "acceptance", "check-iac", "help"} <= listed


def test_acceptance_writes_to_a_fresh_temporary_folder_and_runs_the_shared_scenarios():
    make = (ROOT / "Makefile").read_text()
    recipe = make[make.index("acceptance: setup"):make.index("## print a bash completion")]
    assert "mktemp -d" in recipe and "/tmp/ecs-guardrail-" not in recipe
    assert "$(SHARED)/scenarios" in recipe and "expected.json" in recipe


def test_stackset_template_without_a_bucket_says_so_before_building_the_package():
    import os
    import shutil
    import subprocess

    if shutil.which("make") is None:
        import pytest

        pytest.skip("no make on PATH")
    env = {k: v for k, v in os.environ.items() if k not in ("STACKSET_BUCKET", "MAKEFLAGS", "MAKELEVEL")}
    run = subprocess.run(["make", "-s", "-n", "stackset-template"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60, env=env)
    # -n prints the recipe without running it: the bucket check comes before make package (a prerequisite ran
    # first, building or failing the Lambda zip before the missing bucket was named)
    lines = run.stdout.splitlines()
    assert lines and "STACKSET_BUCKET" in lines[0]
    assert not any("scripts/package.py" in ln for ln in lines[:2])


def test_each_commands_help_says_what_it_does_and_its_exit_statuses() -> None:
    """``restore --help`` alone tells a new user what restore does and what its exit 1 means."""
    from ecs_guardrail.cli import EXIT_CODES, build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in sub.choices.items():
        text = command.format_help()
        assert command.description and " ".join(command.description.split()) in " ".join(text.split()), name
        assert "exit status:" in text, name
        for code in EXIT_CODES[name]:
            assert f"\n  {code}  " in text, (name, code)
        assert max(len(line) for line in text.split("\n")[text.split("\n").index("exit status:"):]) <= 80
