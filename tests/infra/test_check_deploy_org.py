"""`make check-deploy`'s organisation part (scripts/check_deploy_org.py), its pure parts: the override
sends the central provider and both member aliases to the local emulator (keeping their assume_role), and
lifts both members' table protection so the destroy can finish."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_deploy_org", ROOT / "scripts" / "check_deploy_org.py")
assert _spec and _spec.loader
org = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(org)


def test_every_provider_of_the_example_reaches_only_the_local_emulator():
    text = org.tf_override("http://127.0.0.1:4566", "eu-west-1")
    providers = re.findall(r'provider "aws" \{(.*?)\n\}', text, flags=re.S)
    assert len(providers) == 3
    aliases = sorted(re.findall(r'alias\s+= "(\w+)"', text))
    assert aliases == sorted(org.MEMBERS)
    # the example's own aliases are the ones overridden
    example = (ROOT / "terraform" / "examples" / "organisation" / "main.tf").read_text()
    assert sorted(re.findall(r'alias\s+= "(\w+)"', example)) == aliases
    for body in providers:
        urls = set(re.findall(r'= "(http[^"]*)"', body))
        assert urls == {"http://127.0.0.1:4566"}
        assert "assume_role" not in body  # the example's assume_role is kept, not replaced
    for member in org.MEMBERS:
        assert f'module "{member}" {{\n  deletion_protection = false\n}}' in text
