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
