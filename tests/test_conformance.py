"""The conformance harness (`kafka_mc.testing`): it finds an encoding that differs from the model,
and its configuration list exercises every action and every protocol choice value."""

from __future__ import annotations

import dataclasses

from kafka_mc.model import Config, ReplicationModel
from kafka_mc.properties import PROPERTIES
from kafka_mc.testing import CONFORMANCE_CONFIGS, Expansion, check_conformance, coverage_gaps

SMALL = Config("leader-epoch", messages=1, crashes=1, elections=1)


class ModelEncoding:
    """The model as its own encoding; `spoil` changes one state's expansion."""

    name = "model"
    ordered = True

    def __init__(self, spoil=lambda state, expansion: expansion):
        self.spoil = spoil

    def expand(self, config, states):
        model = ReplicationModel(config)
        for state in states:
            successors = tuple(model.indexed_successors(state))
            values = {p.name: p.holds(state) for p in PROPERTIES if not p.on_step}
            steps = tuple({p.name: p.holds(state, model.action_at(slot), after) for p in PROPERTIES if p.on_step}
                          for slot, after in successors)
            yield self.spoil(state, Expansion(successors, values, steps))


def test_the_conformance_configurations_exercise_every_action_and_protocol_choice():
    assert coverage_gaps(CONFORMANCE_CONFIGS) == []


def test_the_model_conforms_to_itself():
    report = check_conformance(ModelEncoding(), [SMALL], require_coverage=False)
    assert report.ok and report.states > 100


def test_a_missing_successor_a_wrong_property_and_a_wrong_order_are_found():
    def drop_last(state, expansion):
        return dataclasses.replace(expansion, successors=expansion.successors[:-1]) if state.written else expansion

    def flip(state, expansion):
        values = dict(expansion.state_properties, NoLogDivergence=not expansion.state_properties["NoLogDivergence"])
        return dataclasses.replace(expansion, state_properties=values) if state.crashes else expansion

    def reverse(state, expansion):
        return dataclasses.replace(expansion, successors=expansion.successors[::-1])

    missing = check_conformance(ModelEncoding(drop_last), [SMALL], require_coverage=False)
    assert not missing.ok and "successors: model misses" in missing.summary()
    flipped = check_conformance(ModelEncoding(flip), [SMALL], require_coverage=False)
    assert not flipped.ok and "invariant NoLogDivergence is" in flipped.summary()
    reordered = check_conformance(ModelEncoding(reverse), [SMALL], require_coverage=False)
    assert not reordered.ok and "order differs" in reordered.summary()
    unordered = ModelEncoding(reverse)
    unordered.ordered = False
    assert check_conformance(unordered, [SMALL], require_coverage=False).ok


def test_a_list_that_leaves_a_rule_unexercised_fails():
    report = check_conformance(ModelEncoding(), [SMALL])
    assert not report.ok and report.mismatches == []
    assert "action ZkDisconnect" in report.unexercised
    assert "truncate_on_fetch = True (no configuration with it fires LeaderHandleFetchRequest or " \
           "FollowerHandleFetchResponse)" in report.unexercised
