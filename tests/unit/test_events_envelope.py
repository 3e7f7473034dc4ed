"""The envelope's field table stays field-for-field Powertools' ``EventBridgeModel`` (issue 23).

``core/events.py`` does not import that model (Powertools' parser models and pydantic cost of every cold
start); this test imports it and compares: the same attribute names, the same keys in the event (aliases),
the same required fields and the same optional ones.
"""

from __future__ import annotations

import typing

import msgspec
import pytest

from ecs_guardrail.core.events import (
    DeploymentStateChange,
    OtherEcsEvent,
    ServiceAction,
    TaskStateChange,
    _EcsEnvelope,
)

EventBridgeModel = pytest.importorskip("aws_lambda_powertools.utilities.parser.models").EventBridgeModel


def _theirs():
    return {name: (f.alias or name, f.is_required(), type(None) in typing.get_args(f.annotation))
            for name, f in EventBridgeModel.model_fields.items()}


def _ours(model):
    return {f.name: (f.encode_name, f.required, type(None) in typing.get_args(f.type))
            for f in msgspec.structs.fields(model)}


@pytest.mark.parametrize("model", [TaskStateChange, ServiceAction, DeploymentStateChange, OtherEcsEvent])
def test_every_event_model_has_the_eventbridge_fields(model):
    ours = {k: v for k, v in _ours(model).items() if k != "note"}
    if model is OtherEcsEvent:  # kept whatever its detail: parse_event gives {} for a missing one
        assert ours.pop("detail") == ("detail", False, False)
        assert ours == {k: v for k, v in _theirs().items() if k != "detail"}
        return
    assert ours == _theirs()


def test_the_envelope_is_the_eventbridge_model_without_its_detail():
    ours = _ours(_EcsEnvelope)
    theirs = {k: v for k, v in _theirs().items() if k not in ("detail_type", "detail")}
    assert ours == theirs
