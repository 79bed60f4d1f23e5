"""The TLA+ twin (model/tla) and the BFS engine agree, state for state, under TLC.

Counting convention: a TLC error trace lists states, the initial one included; a
kafka-mc trace lists actions, so a shortest violation of `len(trace)` actions is a
TLC trace of `len(trace) + 1` states. Likewise TLC's depth counts states: it is the
BFS engine's depth plus one.
"""

import shutil

import pytest

from kafka_mc.checker import check
from kafka_mc.checker.tla_twins import INVARIANT_NAMES, TLA_DIR, tla_module_for, tlc_config_text, twin_of
from kafka_mc.checker.tlc import TlcError, parse_statistics, parse_violation, run_tlc
from kafka_mc.checker.tla_modules import variant_module
from kafka_mc.model import PROTOCOLS, Config

needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="TLC needs java on PATH")

TWIN_CONFIGS = [
    pytest.param(Config(protocol="hw", replicas=2, messages=2, crashes=1, elections=1), id="hw-2r"),
    pytest.param(Config(protocol="leader-epoch", replicas=2, messages=2, crashes=1, elections=1), id="le-2r"),
    pytest.param(Config(protocol="leader-epoch", replicas=2, messages=2, crashes=1, elections=1, min_isr=2),
                 id="le-2r-min-isr-2"),
    pytest.param(Config(protocol="hw", replicas=3, messages=1, crashes=1, elections=1), id="hw-3r"),
    pytest.param(Config(protocol="leader-epoch", replicas=3, messages=1, crashes=1, elections=1), id="le-3r"),
    # unclean election loses committed data and makes logs diverge under both protocols
    pytest.param(Config(protocol="hw", replicas=2, messages=2, crashes=1, elections=1, unclean=True),
                 id="hw-2r-unclean"),
    pytest.param(Config(protocol="leader-epoch", replicas=2, messages=2, crashes=1, elections=1, unclean=True),
                 id="le-2r-unclean"),
    pytest.param(Config(protocol="hw", replicas=3, messages=1, crashes=1, elections=1, unclean=True),
                 id="hw-3r-unclean"),
    # Case L and Case D: hw truncation fails with clean elections once two brokers crash
    pytest.param(Config(protocol="hw", replicas=2, messages=2, crashes=2, elections=1), id="hw-2r-case-l-d"),
    # the later variants; diverging-epoch loses committed data when a diverging fetch joins the ISR
    pytest.param(Config(protocol="kip-279", replicas=2, messages=2, crashes=1, elections=2), id="kip279-2r"),
    pytest.param(Config(protocol="kip-320", replicas=2, messages=2, crashes=1, elections=2), id="kip320-2r"),
    pytest.param(Config(protocol="diverging-epoch", replicas=2, messages=2, crashes=2, elections=2),
                 id="diverging-2r"),
    pytest.param(Config(protocol="kafka-13141", replicas=2, messages=2, crashes=1, elections=2), id="kafka13141-2r"),
]


@needs_java
@pytest.mark.parametrize("config", TWIN_CONFIGS)
def test_tlc_and_kafka_mc_agree(config):
    expected = check(config, keep_going=True)
    assert expected.complete
    tlc = run_tlc(config, timeout=120)

    assert tlc.distinct_states == expected.stats.distinct_states
    assert tlc.states_generated == expected.stats.states_generated
    assert tlc.depth == expected.stats.depth + 1
    assert set(tlc.violated) == set(expected.violated)
    for violation in expected.violations:
        assert tlc.violations[violation.invariant] == len(violation.trace) + 1, violation.invariant
        assert tlc.shortest_actions(violation.invariant) == len(violation.trace)


def test_config_text_sets_every_constant_and_lists_the_invariants():
    config = Config(protocol="leader-epoch", replicas=3, messages=2, crashes=1, elections=2,
                    acks="1", min_isr=2, unclean=True)
    text = tlc_config_text(config)
    for line in ("Replicas = {A, B, C}", "MaxMessages = 2", "MaxCrashes = 1", "MaxElections = 2",
                 "AcksAll = FALSE", "MinIsr = 2", "Unclean = TRUE", "SPECIFICATION Spec"):
        assert line in text
    assert text.split("INVARIANTS")[1].split() == list(INVARIANT_NAMES)
    assert "INVARIANTS" not in tlc_config_text(config, invariants=())


def test_every_protocol_has_a_twin_and_others_are_refused():
    assert tla_module_for("hw") == "KafkaHw"
    assert tla_module_for("leader-epoch") == "KafkaLeaderEpoch"
    assert all((TLA_DIR / f"{tla_module_for(name)}.tla").is_file() for name in PROTOCOLS)
    with pytest.raises(ValueError, match="unknown"):
        tla_module_for("raft")
    with pytest.raises(ValueError, match="no invariant"):
        tlc_config_text(Config(), invariants=("Liveness",))


def test_the_variant_modules_in_the_repository_are_the_generated_ones():
    for protocol in PROTOCOLS.values():
        path = TLA_DIR / f"{tla_module_for(protocol.name)}.tla"
        assert path.read_text(encoding="utf-8") == variant_module(protocol), \
            f"{path.name} differs from its declaration: python -m kafka_mc.checker.tla_modules rewrites it"


TRACE_OUTPUT = """\
Error: Invariant NoCommittedDataLoss is violated.
Error: The behavior up to this point is:
State 1: <Initial predicate>
/\\ written = 0

State 2: <ProducerWrite line 190, col 5 to line 199, col 25 of module KafkaReplication>
/\\ written = 1

385 states generated, 234 distinct states found, 106 states left on queue.
"""

COMPLETE_OUTPUT = """\
Model checking completed. No error has been found.
2,544 states generated, 1,264 distinct states found, 0 states left on queue.
The depth of the complete state graph search is 18.
"""


def test_tlc_output_parsing():
    assert parse_violation(TRACE_OUTPUT) == ("NoCommittedDataLoss", 2)
    assert parse_violation("Error: Invariant LeaderInIsr is violated by the initial state:\n/\\ x = 1\n") \
        == ("LeaderInIsr", 1)
    assert parse_violation(COMPLETE_OUTPUT) is None
    assert parse_statistics(COMPLETE_OUTPUT) == (2544, 1264, 18)
    with pytest.raises(TlcError):
        parse_statistics(TRACE_OUTPUT)


def test_one_runner_for_every_twin_and_a_model_without_one_is_refused_by_name():
    from kafka_mc.control import ControllerConfig, ControllerModel, PartitionFsmConfig, PartitionFsmModel

    replication = twin_of(Config(protocol="kip-320"))
    assert replication.module == "KafkaKip320" and set(replication.modules) == {
        "KafkaReplication", "KafkaProtocols", "KafkaKip320"}
    assert replication.spec_files()["KafkaKip320.cfg"] == tlc_config_text(Config(protocol="kip-320"))
    controller = twin_of(ControllerModel(ControllerConfig(fence_epochs=False)))
    assert controller.properties == ("OneControllerPerEpoch", "StaleControllerIgnored")
    assert "FenceEpochs = FALSE" in controller.spec_files()["KafkaController.cfg"]
    with pytest.raises(ValueError, match="the partition-fsm model has no TLA\\+ twin; models with one: "
                                         "replication, controller"):
        run_tlc(PartitionFsmModel(PartitionFsmConfig()))
    with pytest.raises(ValueError, match="does not model the setting flush"):
        run_tlc(Config(flush=False))
