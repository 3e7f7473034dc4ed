#!/usr/bin/env python3
"""moto in server mode on 127.0.0.1, with the CloudFormation behaviour ``sam deploy`` needs (check-deploy).

``make check-deploy`` runs the real SAM CLI against this server (``AWS_ENDPOINT_URL``). moto 5.2's
CloudFormation lacks two things real CloudFormation does for every change set, and without them
``sam deploy`` cannot finish on the emulator; this launcher adds exactly these two, and prints each
time it applies one (nothing else of moto is changed):

1. **Transforms.** CloudFormation runs the ``AWS::Serverless-2016-10-31`` transform (the SAM translator)
   on a change set's template before it plans it
   (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/transform-aws-serverless.html);
   moto plans the untransformed template and fails on the first ``AWS::Serverless::Function`` it
   cannot create. Here the change set's template goes through ``samtranslator``'s ``transform`` (the
   library CloudFormation's transform is built from) with the change set's parameter values. moto's
   ``AWS::Events::Archive`` reads ``EventPattern`` only as a JSON string, so a mapping is passed as one.
2. **Outputs.** moto computes a stack's outputs only in ``create_stack``/``update_stack``; after
   ``ExecuteChangeSet`` they stay empty, and ``sam deploy --resolve-s3`` refuses its managed bucket stack
   (``aws-sam-cli-managed-default is missing Tags and/or Outputs``). Here the outputs are computed after
   the change set is applied, as CloudFormation does.

Usage: ``python scripts/emulator.py PORT`` (binds 127.0.0.1 only). Needs moto[server] and
aws-sam-translator (deploy/deploy-check-requirements.txt). The clients must use
``http://localhost:PORT``: moto finds a ``TemplateURL``'s bucket in the path only for ``localhost``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

SERVERLESS = "AWS::Serverless-2016-10-31"


class _NoManagedPolicies:
    """The translator's managed-policy loader; the template names no AWS managed policy by name."""

    def load(self) -> dict[str, str]:
        return {}


def transformed(template: dict[str, Any], parameters: dict[str, Any], region: str) -> dict[str, Any]:
    """``template`` after the SAM transform (when it declares it), with moto's Archive pattern form.

    ``parameters``: the stack's parameter values by name; ``region``: the stack's (``AWS::Region``).
    Raises whatever the SAM translator raises for an invalid template (``InvalidDocumentException``),
    which moto returns as the call's error.
    """
    import boto3
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.translator import Translator

    declared = template.get("Transform")
    if declared == SERVERLESS or (isinstance(declared, list) and SERVERLESS in declared):
        translator = Translator(None, Parser(), boto_session=boto3.session.Session(region_name=region))
        template = translator.translate(template, parameter_values=dict(parameters),
                                        get_managed_policy_map=_NoManagedPolicies().load)
        print(f"emulator: {SERVERLESS} applied to a change set ({len(template['Resources'])} resources)", flush=True)
    for logical, resource in template.get("Resources", {}).items():
        props = resource.get("Properties", {})
        if resource.get("Type") == "AWS::Events::Archive" and isinstance(props.get("EventPattern"), dict):
            props["EventPattern"] = json.dumps(props["EventPattern"])
            print(f"emulator: {logical} EventPattern passed as a JSON string (moto reads only that form)", flush=True)
    return template


def patch_moto() -> None:
    """Apply the two change-set behaviours above to moto's CloudFormation models (in this process)."""
    from moto.cloudformation import models

    parse = models.ChangeSet._parse_template

    def _parse_template(self: Any) -> None:
        parse(self)
        self.template_dict = transformed(self.template_dict, self.parameters, self.stack.region_name)

    execute = models.CloudFormationBackend.execute_change_set

    def execute_change_set(self: Any, change_set_name: str, stack_name: str | None = None) -> None:
        execute(self, change_set_name, stack_name)
        change_set = self.describe_change_set(change_set_name)
        stack = self.stacks[change_set.stack_id]
        stack.template_dict = change_set.template_dict
        stack.output_map = stack._create_output_map()

    models.ChangeSet._parse_template = _parse_template  # type: ignore[method-assign]
    models.CloudFormationBackend.execute_change_set = execute_change_set  # type: ignore[method-assign]


def main(argv: list[str]) -> int:
    """Patch moto and serve on 127.0.0.1:PORT until killed."""
    if len(argv) != 1 or not argv[0].isdigit():
        print("usage: emulator.py PORT", file=sys.stderr)
        return 2
    patch_moto()
    from moto.server import main as moto_main

    moto_main(["-H", "127.0.0.1", "-p", argv[0]])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
