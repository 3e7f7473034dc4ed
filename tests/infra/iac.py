"""Read template.yaml and terraform/ without AWS: PyYAML with the CloudFormation tags, python-hcl2.

Three small tools the parity tests share:

- :func:`load_template` turns the SAM template into plain dicts (short-form tags become their long form,
  ``!Ref X`` -> ``{"Ref": "X"}``), and :func:`evaluate` resolves the intrinsic functions the template uses
  for one set of parameter values (resources stay symbolic: ``{ref:Logical}``, ``{getatt:Logical.Attr}``).
- :func:`load_terraform` merges every ``*.tf`` of a folder into ``{"variable": ..., "locals": ...,
  "resource": {type: {name: body}}, "data": {type: {name: body}}}`` with quotes stripped.
- :func:`terraform_binary` / :func:`run_terraform` run the real terraform on a copy of some files,
  offline (no provider is needed for variables and locals).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
TERRAFORM = ROOT / "terraform"
PATTERNS = ROOT / "events" / "patterns.json"

# Values for the pseudo parameters when a test evaluates the template.
PSEUDO = {
    "AWS::Partition": "aws",
    "AWS::Region": "eu-west-1",
    "AWS::AccountId": "111122223333",
    "AWS::StackName": "ecs-guardrail",
    "AWS::StackId": "arn:aws:cloudformation:eu-west-1:111122223333:stack/ecs-guardrail/"
    "0a1b2c3d-4e5f-6789-abcd-ef0123456789",
    "AWS::URLSuffix": "amazonaws.com",
}
NO_VALUE = object()


# ------------------------------------------------------------------------------------- CloudFormation


class _CfnLoader(yaml.SafeLoader):
    pass


def _tag(name: str):
    long_name = "Ref" if name == "Ref" else ("Condition" if name == "Condition" else f"Fn::{name}")

    def construct(loader: yaml.Loader, node: yaml.Node) -> dict[str, Any]:
        if isinstance(node, yaml.ScalarNode):
            value: Any = loader.construct_scalar(node)
            if name == "GetAtt":
                value = value.split(".", 1)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)
        return {long_name: value}

    return construct


for _name in (
    "Ref",
    "Condition",
    "GetAtt",
    "Sub",
    "Join",
    "Split",
    "Select",
    "If",
    "Equals",
    "Not",
    "And",
    "Or",
    "FindInMap",
    "Base64",
    "GetAZs",
    "ImportValue",
    "Cidr",
    "Transform",
):
    _CfnLoader.add_constructor(f"!{_name}", _tag(_name))


def load_template(path: Path = TEMPLATE, **params: str) -> dict[str, Any]:
    """The template with its ``Fn::ForEach`` loops expanded (AWS::LanguageExtensions) for ``params``
    (parameter defaults for the rest), as CloudFormation hands it to the SAM transform."""
    with path.open() as handle:
        raw = yaml.load(handle, Loader=_CfnLoader)  # noqa: S506 - SafeLoader subclass
    return expand_foreach(raw, parameter_values(raw, **params))


def raw_template(path: Path = TEMPLATE) -> dict[str, Any]:
    """The template as written (loops not expanded)."""
    with path.open() as handle:
        return yaml.load(handle, Loader=_CfnLoader)  # noqa: S506 - SafeLoader subclass


def _substitute(node: Any, name: str, value: str) -> Any:
    if isinstance(node, str):
        return node.replace("${" + name + "}", value).replace("&{" + name + "}", re.sub(r"\W", "", value))
    if isinstance(node, list):
        return [_substitute(item, name, value) for item in node]
    if isinstance(node, dict):
        if node == {"Ref": name}:
            return value
        return {_substitute(k, name, value): _substitute(v, name, value) for k, v in node.items()}
    return node


def _expand_section(section: dict[str, Any], template: Mapping[str, Any], params: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in section.items():
        if not key.startswith("Fn::ForEach::"):
            out[key] = value
            continue
        name, collection, fragment = value
        if isinstance(collection, dict):  # a Ref to a CommaDelimitedList parameter
            (ref,) = collection.values()
            collection = str(params[ref]).split(",")
        for item in collection:
            out.update(_expand_section(_substitute(fragment, name, str(item)), template, params))
    return out


def expand_foreach(template: dict[str, Any], params: Mapping[str, str]) -> dict[str, Any]:
    """Expand ``Fn::ForEach::*`` in Conditions, Resources and Outputs: ``${Id}``/``&{Id}`` in keys and
    strings and ``Ref: Id`` become each item of the collection (a list, or a CommaDelimitedList)."""
    out = dict(template)
    for section in ("Conditions", "Resources", "Outputs"):
        if section in out:
            out[section] = _expand_section(out[section], template, params)
    return out


def parameter_values(template: Mapping[str, Any], **overrides: str) -> dict[str, str]:
    """Every parameter at its default (as CloudFormation passes it: a string), then ``overrides``."""
    values = {name: str(spec.get("Default", "")) for name, spec in template["Parameters"].items()}
    unknown = set(overrides) - set(values)
    if unknown:
        raise KeyError(f"not parameters of the template: {sorted(unknown)}")
    values.update(overrides)
    return values


class Evaluator:
    """Resolves the intrinsic functions of ``template`` for one set of parameter values."""

    def __init__(self, template: Mapping[str, Any], params: Mapping[str, str]):
        self.template = template
        self.params = dict(params)
        self.resources = set(template.get("Resources", {}))

    def condition(self, name: str) -> bool:
        return bool(self(self.template["Conditions"][name]))

    def __call__(self, node: Any) -> Any:  # noqa: C901 - one branch per intrinsic
        if isinstance(node, list):
            return [v for v in (self(item) for item in node) if v is not NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            ((key, arg),) = node.items()
            if key == "Ref":
                if arg == "AWS::NoValue":
                    return NO_VALUE
                if arg in PSEUDO:
                    return PSEUDO[arg]
                if arg in self.params:
                    if self.template["Parameters"][arg].get("Type") == "CommaDelimitedList":
                        return self.params[arg].split(",")
                    return self.params[arg]
                if arg in self.resources:
                    return f"{{ref:{arg}}}"
                raise KeyError(f"Ref to unknown {arg}")
            if key == "Fn::GetAtt":
                logical, attr = arg
                if logical not in self.resources:
                    raise KeyError(f"GetAtt of unknown {logical}")
                return f"{{getatt:{logical}.{attr}}}"
            if key == "Fn::Sub":
                text, extra = (arg, {}) if isinstance(arg, str) else (arg[0], {k: self(v) for k, v in arg[1].items()})

                def sub(match: re.Match[str]) -> str:
                    ref = match.group(1)
                    if ref in extra:
                        return str(extra[ref])
                    if "." in ref and ref.split(".", 1)[0] in self.resources:
                        return f"{{getatt:{ref}}}"
                    return str(self({"Ref": ref}))

                return re.sub(r"\$\{([^}!]+)\}", sub, text)
            if key == "Fn::Join":
                delimiter, items = arg
                values = self(items)
                return delimiter.join(values if isinstance(values, list) else [values])
            if key == "Fn::Split":
                delimiter, text = arg
                return str(self(text)).split(delimiter)
            if key == "Fn::Select":
                return self(arg[1])[int(self(arg[0]))]
            if key == "Fn::If":
                name, yes, no = arg
                return self(yes) if self.condition(name) else self(no)
            if key == "Fn::Equals":
                return self(arg[0]) == self(arg[1])
            if key == "Fn::Not":
                return not self(arg[0])
            if key == "Fn::And":
                return all(self(a) for a in arg)
            if key == "Fn::Or":
                return any(self(a) for a in arg)
            if key == "Condition":
                return self.condition(arg)
            if key == "Fn::FindInMap":
                mapping, top, second = (self(a) for a in arg)
                return self.template["Mappings"][mapping][top][second]
        return {k: v for k, v in ((k, self(v)) for k, v in node.items()) if v is not NO_VALUE}


def resources_of_type(template: Mapping[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == type_}


def function_environment(template: Mapping[str, Any], logical: str) -> dict[str, Any]:
    """Globals.Function environment merged with the function's own, as SAM does."""
    merged = dict(template.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {}))
    props = template["Resources"][logical]["Properties"]
    merged.update(props.get("Environment", {}).get("Variables", {}))
    return merged


def function_property(template: Mapping[str, Any], logical: str, name: str) -> Any:
    props = template["Resources"][logical]["Properties"]
    if name in props:
        return props[name]
    return template.get("Globals", {}).get("Function", {}).get(name)


# ---------------------------------------------------------------------------------------------- Terraform


def _hcl_options():
    import hcl2
    from hcl2.utils import SerializationOptions

    return hcl2, SerializationOptions(
        with_comments=False, explicit_blocks=False, preserve_heredocs=True, strip_string_quotes=True
    )


def load_terraform(folder: Path = TERRAFORM) -> dict[str, Any]:
    """Every ``*.tf`` directly in ``folder``, merged by block kind."""
    hcl2, options = _hcl_options()
    merged: dict[str, Any] = {"variable": {}, "locals": {}, "resource": {}, "data": {}, "output": {}}
    for path in sorted(folder.glob("*.tf")):
        with path.open() as handle:
            doc = hcl2.load(handle, serialization_options=options)
        for block in doc.get("variable", []):
            merged["variable"].update(block)
        for block in doc.get("output", []):
            merged["output"].update(block)
        for block in doc.get("locals", []):
            merged["locals"].update(block)
        for kind in ("resource", "data"):
            for block in doc.get(kind, []):
                for type_, named in block.items():
                    merged[kind].setdefault(type_, {}).update(named)
    return merged


def heredoc(value: str) -> str:
    """The text of a ``<<-EOT`` heredoc as python-hcl2 keeps it (or ``value`` when it is none)."""
    match = re.fullmatch(r'"?<<-?(\w+)\n(.*?)\n\s*\1"?\s*', value, flags=re.S)
    return match.group(2) if match else value


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def terraform_binary() -> str | None:
    return shutil.which("terraform")


def run_terraform(workdir: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run terraform in ``workdir`` offline: no CLI config, no plugin cache, no colour, no prompt."""
    rc = workdir / ".terraformrc"
    rc.write_text("")
    env = {**os.environ, "TF_CLI_CONFIG_FILE": str(rc), "TF_IN_AUTOMATION": "1", "CHECKPOINT_DISABLE": "1"}
    env.pop("TF_PLUGIN_CACHE_DIR", None)
    binary = terraform_binary()
    assert binary, "terraform is not on PATH"
    return subprocess.run(
        [binary, *args, "-no-color"] if args[0] != "console" else [binary, *args],
        cwd=workdir,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def terraform_module_copy(tmp: Path, *names: str) -> Path:
    """Copy some files of terraform/ into ``tmp`` and ``terraform init`` them (no provider needed)."""
    for name in names:
        shutil.copy(TERRAFORM / name, tmp / name)
    result = run_terraform(tmp, "init", "-backend=false", "-input=false")
    assert result.returncode == 0, result.stdout + result.stderr
    return tmp


def terraform_console(workdir: Path, expression: str, variables: Mapping[str, str]) -> Any:
    var_args = [a for k, v in variables.items() for a in ("-var", f"{k}={v}")]
    result = run_terraform(workdir, "console", *var_args, stdin=f"jsonencode({expression})\n")
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(json.loads(result.stdout.strip()))
