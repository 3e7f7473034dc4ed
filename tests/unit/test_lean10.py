"""A small replay's fixed cost (issue 33 item 2): what the command line builds and imports for one command."""

from __future__ import annotations

import argparse

import pytest

from ecs_guardrail import cli


def _sub(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.mark.parametrize("argv, command", [
    (["replay", "x", "--json"], "replay"), (["--version"], None), ([], None), (["-h", "audit"], "audit"),
    (["--", "restore"], "restore"), (["bogus", "replay"], None), (["timeline", "--cluster", "replay"], "timeline"),
])
def test_the_command_named_is_the_first_word_that_is_not_an_option(argv, command):
    assert cli._command_named(argv) == command


@pytest.mark.parametrize("command", list(cli.EXIT_CODES))
def test_building_one_command_builds_it_as_the_whole_parser_does(command):
    """The command's own parser (arguments, help, exit statuses) is the full parser's; the top level still
    lists every command with its one-line help (``--help``, an invalid choice)."""
    one, full = cli.build_parser(command), cli.build_parser()
    assert one.format_help() == full.format_help()
    assert list(_sub(one)) == list(_sub(full))
    assert _sub(one)[command].format_help() == _sub(full)[command].format_help()
    others = [name for name in _sub(one) if name != command]
    assert all(len(_sub(one)[name]._actions) == 1 for name in others)  # -h only: not built


def test_the_process_own_command_line_freezes_what_it_leaves_for_the_exit(monkeypatch):
    """``main()`` (the console script) freezes the heap for the interpreter's exit collections; ``main(argv)``
    (a caller in process, as the tests) leaves the collector as it was."""
    import gc

    frozen: list[int] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(1))
    monkeypatch.setattr("sys.argv", ["ecs-guardrail", "--version"])
    with pytest.raises(SystemExit):
        cli.main()
    assert frozen == [1]
    with pytest.raises(SystemExit):
        cli.main(["--version"])
    assert frozen == [1]
