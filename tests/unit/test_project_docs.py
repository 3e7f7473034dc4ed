"""Docs, packaging and make targets say what the project does (issue 10, rough edges 6 to 9)."""

from __future__ import annotations

import re
import tomllib

from tests.conftest import ROOT

LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_relative_links_of_the_docs_point_at_something():
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    broken = []
    for doc in docs:
        for target in LINK.findall(doc.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (doc.parent / target).exists():
                broken.append(f"{doc.relative_to(ROOT)} -> {target}")
    assert broken == []


def test_design_docs_name_folders_that_exist():
    text = (ROOT / "docs" / "design" / "ECS-EVENTS.md").read_text()
    assert "../samples/" not in text and "events/ecs/" in text
    scenarios = (ROOT / "docs" / "design" / "SCENARIOS.md").read_text()
    assert "## The scenarios in `../scenarios/`" not in scenarios and "events/scenarios/" in scenarios
    assert (ROOT / "docs" / "design" / "STYLE.md").exists()


def test_readme_examples_call_the_installed_command():
    bare = [ln for ln in (ROOT / "README.md").read_text().splitlines() if ln.lstrip().startswith("ecs-guardrail ")]
    assert bare == []


def test_readme_says_which_stop_line_counts():
    assert 'Only the `"lastStatus": "STOPPED"` line' in (ROOT / "README.md").read_text()


def test_license_is_an_spdx_string_with_a_setuptools_that_reads_it():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "Apache-2.0"
    floor = [r for r in project["build-system"]["requires"] if r.startswith("setuptools")]
    assert floor and int(re.search(r">=(\d+)", floor[0]).group(1)) >= 77  # PEP 639 support


def test_make_bench_prints_and_only_bench_docs_writes():
    mk = (ROOT / "mk" / "bench.mk").read_text()
    recipes = dict(re.findall(r"^([\w-]+): setup\n\t(.+)$", mk, flags=re.M))
    assert "--write" not in recipes["bench"] and "--write" in recipes["bench-docs"]
    src = (ROOT / "bench" / "run.py").read_text()
    assert 'ap.add_argument("--write", action="store_true"' in src and "if args.write:" in src
