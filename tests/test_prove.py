"""`kafka-mc prove`: the shipped lemmas prove NoCommittedDataLoss and NoLogDivergence for leader
epochs (0.11.0, 2.0.0, 2.0.1 and 2.1.0: with and without KAFKA-7415's epoch at election, with a
follower's skip of its leader's LeaderAndIsr in any epoch, the next only, or none) with any number
of crashes and elections, and hold in every reachable state, also where the variants' steps mix;
for the diverging-fetch variants and under hw they fail with a counterexample to induction, and
bounded model checking shows hw's violation reachable; a variant whose choices make shipped lemmas
false in reachable states (KIP-966, KAFKA-15583 with min.insync.replicas 2) is refused by name; a counterexample replays and is reported;
unknown is never proved; bad input is refused; users' own lemmas work."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import z3

from kafka_mc import cli, exitcodes
from kafka_mc.checker.symbolic.bmc import EncodingMismatch
from kafka_mc.checker.symbolic.induction import (
    DEFAULT_PROPERTIES,
    UNBOUNDED,
    Lemma,
    encoding_exact,
    failing_in,
    prove,
    reachability,
    replay_trace,
)
from kafka_mc.checker.symbolic.layout import Shape, constant
from kafka_mc.checker.symbolic.lemmas import LEMMAS, WrittenBound
from kafka_mc.checker.symbolic.transitions import EncodingError
from kafka_mc.cli_prove import prove_command
from kafka_mc.model import PROTOCOLS, Config, ReplicationModel
from kafka_mc.model.protocols import latest_epoch
from kafka_mc.model.state import NO_LEADER
from kafka_mc.properties import INVARIANTS
from kafka_mc.testing import reachable_states

PROPERTIES = {p.name: p for p in INVARIANTS}
PROVED = ["leader-epoch", "kip-279", "kafka-7415", "kip-320"]  # the variants the shipped lemmas prove

if not any(command.name == "prove" for command in cli.app.registered_commands):
    cli.app.command("prove")(prove_command)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(["prove", "--quiet", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("protocol", [  # the later two take the same lemmas a minute more
    *PROVED[:2], *(pytest.param(protocol, marks=pytest.mark.slow) for protocol in PROVED[2:])])
def test_shipped_lemmas_prove_both_properties_for_any_crashes_and_elections(protocol):
    result = prove(Config(protocol, messages=2))
    assert result.status == "proved", result.reason
    assert result.unbounded == UNBOUNDED and "any number of elections" in result.scope
    assert "epoch caches stay within 4 entries" in result.scope
    slots = len(ReplicationModel(result.config).action_names) * 2
    kinds = [query.kind for query in result.queries]
    assert kinds.count("consecution") == slots * len(LEMMAS)  # one query per action slot and lemma
    assert kinds.count("initiation") == len(LEMMAS) and kinds.count("safety") == 2
    assert all(query.answer == "holds" for query in result.queries)


@pytest.mark.parametrize("protocol", PROVED)
def test_every_shipped_lemma_holds_in_every_reachable_state_of_a_bounded_run(protocol):
    config = Config(protocol, messages=2, crashes=2, elections=2)
    assert failing_in(LEMMAS, Shape.of(config, integers=True), reachable_states(config)) == {}


def test_one_lemma_set_serves_the_variants_with_and_without_an_epoch_at_election():
    """Each variant's consecution is checked against the same lemmas, so they must hold wherever
    the variants' steps mix; and both ways an epoch enters a cache are exercised, and the skip of a
    LeaderAndIsr (`follower_skips`) as well as the truncation."""
    bounds = dict(messages=2, crashes=2, elections=2)
    states = list(reachable_states(*(Config(protocol, **bounds) for protocol in PROVED)))
    shape = Shape.of(Config("kafka-7415", **bounds), integers=True)  # a layout with the leader each replica follows
    assert shape.leader_ids and failing_in(LEMMAS, shape, states) == {}
    assert all(PROPERTIES[name].holds(state) for state in states for name in DEFAULT_PROPERTIES)
    # a leader that has not cached its epoch (before KAFKA-7415: LeaderCacheLatest's second case),
    # and a latest cached epoch without a record (KAFKA-7415: EmptyLatestAtHw's premise)
    assert any(state.controller.leader != NO_LEADER
               and latest_epoch(state.replicas[state.controller.leader]) != state.controller.epoch for state in states)
    assert any(replica.epochs and replica.epochs[-1][1] == replica.leo for state in states for replica in state.replicas)
    # a follower told of a newer epoch of the leader it follows, re-elected, that skips it (and so in 0.11.0
    # and 2.0.0 too; never in 2.1.0, where no replica keeps its leader) with records to keep
    skips = PROTOCOLS["kafka-7415"].skips_leader_and_isr
    assert any(skips(replica, controller.leader, controller.epoch) and replica.alive and replica.log
               and replica.epoch < controller.epoch and controller.leader != index
               for state, controller in ((state, state.controller) for state in states)
               for index, replica in enumerate(state.replicas))


# kafka-15583 with min.insync.replicas 1: its HW rule holds the HW of an empty ISR only, which it never
# has (the lemmas prove kip-320 with that rule); it fails where kafka-14704 does
@pytest.mark.parametrize("protocol", ["diverging-epoch", "kafka-13141", "kafka-15583"])
def test_the_shipped_lemmas_do_not_cover_a_diverging_fetch(protocol):
    result = prove(Config(protocol, messages=2))
    cti = result.counterexample
    assert result.status == "failed" and cti.kind == "consecution"
    assert cti.lemma == "ResponseAtLeo" and cti.action.name == "LeaderHandleFetchRequest"


@pytest.mark.parametrize("protocol, min_isr, choice, broken", [
    ("kip-966", 1, "eligible_leaders", ["LeaderInIsr"]),
    ("kafka-15583", 2, "hw_needs_min_isr", ["EmptyLatestAtHw", "LeaderHwCoversCommitted"]),
])
def test_a_variant_whose_choices_break_shipped_lemmas_is_refused_by_name(capsys, protocol, min_isr, choice, broken):
    bounded = Config(protocol, messages=1, crashes=1, elections=1, min_isr=min_isr)
    shipped = [item for item in LEMMAS if item.name in broken]
    assert set(failing_in(shipped, Shape.of(bounded, integers=True), reachable_states(bounded))) == set(broken)
    config = Config(protocol, messages=2, min_isr=min_isr)
    with pytest.raises(EncodingError, match=f"^the shipped lemmas do not cover protocol '{protocol}': with {choice}"
                                            f".*{', '.join(broken)} do(es)? not hold in its reachable states"):
        prove(config)
    code, out, err = run(capsys, "--protocol", protocol, "--min-isr", str(min_isr))
    assert code == exitcodes.BAD_INPUT and not out and f"protocol '{protocol}'" in err and choice in err
    # a user's own lemmas may cover it: not refused
    assert prove(config, [WrittenBound], properties=()).status in ("proved", "failed")


def test_a_proof_with_disk_failures_is_refused_by_name():
    """A proof lifts the crash bound, and the disk failures are crashes: it takes none."""
    with pytest.raises(EncodingError, match="^disk_failures 1: a proof lifts the bound on crashes"):
        prove(Config("kip-279", messages=1, crashes=1, disk_failures=1))


def test_same_lemmas_fail_for_hw_and_bounded_model_checking_shows_the_violation_reachable():
    config = Config("hw", messages=2)
    result = prove(config)
    assert result.status == "failed"
    cti = result.counterexample
    assert cti.kind == "consecution" and len(cti.states) == 2 and cti.action is not None
    # the two-state report replays through the explicit model to the solver's state after
    assert cti.trace is not None and cti.trace.start == cti.states[0]
    assert cti.trace.states()[-1] == cti.states[1]
    # every lemma holds before; the lemma named breaks after
    shape = Shape.of(config, cache=0, integers=True)
    formulas = {item.name: item.formula for item in LEMMAS}
    assert all(z3.is_true(z3.simplify(f(constant(shape, cti.states[0])))) for f in formulas.values())
    assert z3.is_false(z3.simplify(formulas[cti.lemma](constant(shape, cti.states[1]))))
    # hw's reachable states break some of the lemmas themselves
    bounded = Config("hw", messages=2, crashes=2, elections=1)
    assert failing_in(LEMMAS, Shape.of(bounded, integers=True), reachable_states(bounded))
    found = reachability(config, result.unbounded, result.properties, 10)
    assert found.violated == "NoCommittedDataLoss" and len(found.violation) == 10  # Case L
    assert not PROPERTIES["NoCommittedDataLoss"].holds(found.violation.states()[-1])


def test_cti_report_in_all_four_formats_and_exit_codes(tmp_path, capsys):
    code, out, _ = run(capsys, "--protocol", "hw", "--bmc-depth", "0", "--out", str(tmp_path))
    assert code == exitcodes.FAILED, out  # not proved, and no violation shown
    assert "NOT PROVED" in out and "Counterexample to induction" in out and "State before" in out
    reports = sorted(path.name for path in tmp_path.iterdir() if not path.name.startswith("."))
    stems = {name.split(".")[0] for name in reports}
    assert len(stems) == 1 and next(iter(stems)).startswith("hw-cti-")
    assert {name[len(next(iter(stems))):] for name in reports} == {".itf.json", ".txt", ".md", ".html"}
    itf = json.loads(next(tmp_path.glob("*.itf.json")).read_text())
    assert "counterexample to induction" in itf["#meta"]["start"] and len(itf["states"]) == 2


def test_failed_proof_with_a_reachable_violation_exits_12_in_json(capsys):
    code, out, _ = run(capsys, "--protocol", "hw", "--bmc-depth", "10", "--format", "json")
    view = json.loads(out)
    assert code == exitcodes.VIOLATION == view["exit_code"]
    assert view["status"] == "failed" and view["proved"] is False
    assert view["config"]["crashes"] == "any" and view["config"]["elections"] == "any"
    assert view["counterexample"]["kind"] == "consecution" and view["counterexample"]["replayed"]
    assert view["reachability"]["violated"] == "NoCommittedDataLoss"


def test_k_induction_base_case_and_step():
    def NothingWritten(s):
        """No message is ever written (false after one step)."""
        return s.written == 0

    one = prove(Config("kip-279", messages=2), [NothingWritten], properties=())
    assert one.status == "failed" and one.counterexample.kind == "consecution"
    two = prove(Config("kip-279", messages=2), [NothingWritten], properties=(), k=2)
    assert two.status == "failed" and two.counterexample.kind == "initiation"  # reachable in one step
    assert [action.name for action in two.counterexample.actions] == ["ProducerWrite"]
    assert two.counterexample.trace.states()[-1].written == 1
    proof = prove(Config("leader-epoch", messages=1), k=2)  # one message: half the time of two
    assert proof.status == "proved" and {q.depth for q in proof.queries if q.kind == "initiation"} == {0, 1}


def test_spacer_finds_an_invariant_for_a_simple_property_and_reports_none_as_unknown():
    from kafka_mc.checker.symbolic.spacer import spacer_prove

    result = spacer_prove(Config("leader-epoch", messages=2), ("LeaderInIsr",), max_seconds=120)
    assert result.status == "proved" and "Inv" in result.invariant
    result = spacer_prove(Config("leader-epoch", messages=2), max_seconds=1)
    assert result.status == "unknown" and not result.proved and "within 1 s" in result.reason


def test_unknown_and_time_outs_are_never_proved(capsys):
    result = prove(Config("kip-279", messages=2), max_seconds=1e-6)
    assert result.status == "unknown" and not result.proved and "time budget" in result.reason
    code, out, _ = run(capsys, "--protocol", "kip-279", "--max-seconds", "0.000001")
    assert code == exitcodes.INCOMPLETE and "UNKNOWN" in out and "PROVED" not in out.replace("NOT PROVED", "")
    code, out, _ = run(capsys, "--protocol", "kip-279", "--method", "spacer", "--max-seconds", "1")
    assert code == exitcodes.INCOMPLETE and "UNKNOWN" in out


@pytest.mark.parametrize("argv, named", [
    (["--crashes", "many"], "'many'"),
    (["--elections", "-1"], "elections"),
    (["--k", "0"], "--k"),
    (["--method", "magic"], "'magic'"),
    (["--property", "Nope"], "'Nope'"),
    (["--epoch-cache", "x"], "'x'"),
    (["--format", "xml"], "'xml'"),
    (["--lemmas", "no/such/file.py"], "no/such/file.py"),
    (["--protocol", "raft"], "'raft'"),
])
def test_bad_input_exits_151_naming_the_value(capsys, argv, named):
    code, _, err = run(capsys, *argv)
    assert code == exitcodes.BAD_INPUT and named in err and "Traceback" not in err


def test_a_counterexample_the_model_does_not_replay_is_an_internal_error():
    result = prove(Config("hw", messages=2), max_seconds=60)
    cti = result.counterexample
    wrong = cti.states[0]._replace(written=cti.states[1].written + 1)
    with pytest.raises(EncodingMismatch, match=re.escape(str(cti.action))):
        replay_trace(result.config, UNBOUNDED, (cti.states[0], wrong), cti.actions, False)


@pytest.mark.parametrize("config", [Config("kafka-15583", messages=2, crashes=2, elections=1, min_isr=2),
                                    Config("kip-320", replicas=3, messages=1, crashes=1, elections=2)],
                         ids=["kafka-15583", "kip-320-3r"])
def test_the_encoding_is_exact_on_every_reachable_state_and_not_on_a_cache_whose_epochs_fall(config):
    """`encoding_exact` excuses a counterexample's step from a state no behaviour reaches, never from a reachable
    one; a cache whose epochs do not rise (a solver's state once met by `prove(..., [WrittenBound])` under
    kafka-15583, whose truncation the encoding takes as a prefix, `truncation.py`) is not exact."""
    states = list(reachable_states(config))
    assert all(encoding_exact(state) for state in states)
    state = states[-1]
    leader = state.replicas[0]._replace(epochs=((0, 0), (4, 0), (2, 0)))
    assert not encoding_exact(state._replace(replicas=(leader, *state.replicas[1:])))


# docs/proofs.md's example, run here with its printed results checked (tests/test_docs.py leaves it to this test)
PROOFS_PAGE = Path(__file__).resolve().parent.parent / "docs" / "proofs.md"
DOCS_EXAMPLE = re.search(r"^```python\n(.*?)^```", PROOFS_PAGE.read_text(encoding="utf-8"), re.S | re.M).group(1)


def test_a_users_lemma_function_works_as_the_docs_show(capsys, tmp_path):
    exec(compile(DOCS_EXAMPLE, str(PROOFS_PAGE), "exec"), {})
    first, second = capsys.readouterr().out.splitlines()
    assert first.startswith("proved ")
    assert second.startswith("failed LeaderHwPositive ")
    # the same lemmas from a file on the command line (with one message: the proof takes half the time)
    path = tmp_path / "mine.py"
    path.write_text(DOCS_EXAMPLE.split("result =")[0] + "LEMMAS = [HwBelowLeo]\n")
    code, out, _ = run(capsys, "--protocol", "kip-320", "--messages", "1", "--lemmas", str(path))
    assert code == exitcodes.OK and f"{len(LEMMAS) + 1} lemmas" in out
    path.write_text(DOCS_EXAMPLE.split("result =")[0] + "LEMMAS = [LeaderHwPositive]\n")
    code, out, _ = run(capsys, "--protocol", "kip-320", "--messages", "1", "--lemmas", str(path), "--bmc-depth", "6")
    assert code == exitcodes.FAILED and "LeaderHwPositive" in out and "no violation" in out


def test_lemmas_are_named_and_documented():
    names = [item.name for item in LEMMAS]
    assert len(set(names)) == len(names) and all(item.doc for item in LEMMAS)
    assert Lemma.of(LEMMAS[0]) is LEMMAS[0]
    with pytest.raises(ValueError, match="repeated"):
        prove(Config("kip-279"), [LEMMAS[0], LEMMAS[0]])


def test_a_write_acknowledged_twice_is_one_acknowledgement_in_the_model_as_in_the_encoding():
    """A consecution counterexample Z3 once gave (an unreachable state: the leader already holds
    message 1 when it is written): the model summed the acknowledged messages' bits, so a message
    in the log twice came out as message 2; acknowledgements are a set, as the encoding's flags."""
    from kafka_mc.model.actions import Action
    from kafka_mc.model.state import Controller, FetchResponse, Record, Replica, State

    response = FetchResponse(offset=1, hw=1, records=(Record(1, 0),), out_of_range=False)
    leader = Replica((Record(1, 1),), 0, 0, ((2, 0),), 0, 1, 1, response, 2, (0, 2), 0, 0, False)
    follower = Replica((), 0, 0, ((0, 0),) * 4, 0, 0, 0, response, 0, (0, 0), 0, 0, False)
    before = State((leader, follower), Controller(NO_LEADER, 0, 0, 0, 0, 0, 0), 0, 0, (), (), 0, 0, 0, 0, 0)
    config = Config("kip-279", messages=2)
    after = ReplicationModel(config).next_state(before, Action("ProducerWrite", 0))
    assert after.replicas[0].log == (Record(1, 1), Record(1, 1)) and after.acked == 1 << 1
    trace, _ = replay_trace(config, UNBOUNDED, (before, after), (Action("ProducerWrite", 0),), False)
    assert trace is not None
