#!/usr/bin/env python3
"""The template a StackSet deploys: template.yaml after ``sam package`` and the SAM transform.

StackSets cannot run transforms (``AWS::Serverless-2016-10-31`` is a macro CloudFormation runs per
change set; a StackSet's template must be plain CloudFormation), so the packaged template (every
``CodeUri`` an ``s3://`` URL, from ``sam package``) goes through ``samtranslator``'s ``Translator``, the
library the transform is built from, here, once. Parameters stay parameters: nothing of one account or
region is baked in (the translator's pseudo parameters resolve only SAM's own properties, none of which
this template uses with them), so every account's stack gets its values from the StackSet.

Usage: ``python scripts/stackset_template.py PACKAGED.yaml OUT.json`` (``make stackset-template``).
Needs aws-sam-translator (deploy/deploy-check-requirements.txt). Exit 2 when the input still has a
local ``CodeUri`` (run ``sam package`` first) or the output would still declare a transform.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SERVERLESS = "AWS::Serverless-2016-10-31"


def _load(path: Path) -> dict[str, Any]:
    """A CloudFormation YAML (short-form tags such as ``!Ref``) or JSON file as its long-form dict."""
    from samcli.yamlhelper import yaml_parse  # the SAM CLI's own reader of packaged templates

    return yaml_parse(path.read_text())  # type: ignore[no-any-return]


def processed(template: dict[str, Any], region: str = "us-east-1") -> dict[str, Any]:
    """``template`` (packaged) after the SAM transform, without a ``Transform``.

    ``region``: the translator's session region (it reads no account; the output names no region).
    Raises ``ValueError`` for a function whose ``CodeUri`` is not in S3 (not packaged).
    """
    import boto3
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.translator import Translator

    for logical, resource in template.get("Resources", {}).items():
        if resource.get("Type") == "AWS::Serverless::Function":
            uri = resource.get("Properties", {}).get("CodeUri")
            if not (isinstance(uri, str) and uri.startswith("s3://")) and not isinstance(uri, dict):
                raise ValueError(f"{logical}: CodeUri {uri!r} is not in S3; run `sam package` first")
    translator = Translator(None, Parser(), boto_session=boto3.session.Session(region_name=region))
    out = translator.translate(template, parameter_values={}, get_managed_policy_map=lambda: {})
    out.pop("Transform", None)
    return out  # type: ignore[no-any-return]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: stackset_template.py PACKAGED.yaml OUT.json", file=sys.stderr)
        return 2
    try:
        out = processed(_load(Path(argv[0])))
    except ValueError as exc:
        print(f"stackset_template: {exc}", file=sys.stderr)
        return 2
    if "Transform" in out or any(r.get("Type", "").startswith("AWS::Serverless::") for r in out["Resources"].values()):
        print("stackset_template: the output still needs a transform", file=sys.stderr)
        return 2
    Path(argv[1]).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    kinds: dict[str, int] = {}
    for r in out["Resources"].values():
        kinds[r["Type"]] = kinds.get(r["Type"], 0) + 1
    print(f"wrote {argv[1]}: {len(out['Resources'])} resources, {len(out.get('Parameters', {}))} parameters, "
          f"no transform ({kinds.get('AWS::Lambda::Function', 0)} functions)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
