"""`ecs-guardrail --help` names every command, and every option of every command has help text."""

from __future__ import annotations

import argparse

from ecs_guardrail.cli import build_parser


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_the_top_level_description_names_every_command():
    parser = build_parser()
    missing = [name for name in _subparsers(parser) if name not in (parser.description or "")]
    assert missing == []


def test_every_option_of_every_command_has_help():
    bare = [f"{name} {'/'.join(a.option_strings) or a.dest}"
            for name, sub in _subparsers(build_parser()).items()
            for a in sub._actions
            if not isinstance(a, argparse._HelpAction) and not a.help]
    assert bare == []


def test_replay_help_does_not_say_the_default_engine_is_moto():
    # the default engine (fast) never imports moto: the help must not send a new user to moto's docs
    parser = build_parser()
    top = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    replay_help = next(c.help for c in top._choices_actions if c.dest == "replay")
    assert "(moto)" not in replay_help and "in memory" in replay_help
    engine = next(a for a in _subparsers(parser)["replay"]._actions if "--engine" in a.option_strings)
    assert "no moto" in engine.help


def test_replay_alerts_out_names_a_file():
    alerts = next(a for a in _subparsers(build_parser())["replay"]._actions if "--alerts-out" in a.option_strings)
    assert alerts.metavar == "FILE.jsonl"
