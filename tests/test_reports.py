"""The counterexample reports: ITF, TLC-style text, Markdown, HTML and the writer that protects user files."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import itf_py
import pytest

from kafka_mc.checker import Trace, check
from kafka_mc.control.replication import ReplicationSystem
from kafka_mc.counterexamples.files import MANIFEST, ReportConflict, write_files
from kafka_mc.counterexamples.explain import diagnose, explain, verdict
from kafka_mc.counterexamples.html import trace_html
from kafka_mc.counterexamples.itf import itf_text, itf_to_trace, trace_to_itf
from kafka_mc.counterexamples.markdown import trace_markdown
from kafka_mc.counterexamples.reports import read_itf_file, write_reports
from kafka_mc.counterexamples.steps import trace_steps
from kafka_mc.counterexamples.text import trace_text
from kafka_mc.model import Config, ReplicationModel, parse_action

CASE_D_LEADER_EPOCH = (
    "ProducerWrite(A) LeaderHandleFetchRequest(B) FollowerHandleFetchResponse(B) LeaderHandleFetchRequest(B) "
    "FollowerHandleFetchResponse(B) ProducerWrite(A) LeaderShrinkIsr(B) ReplicaCrash(A) ReplicaCrash(B) "
    "ControllerNoticeFailure(A) ReplicaRestart(B) ControllerElectLeader(B) ProducerWrite(B) ReplicaRestart(A) "
    "BecomeFollower(A) FollowerTruncateByLeaderEpoch(A) LeaderHandleFetchRequest(A) FollowerHandleFetchResponse(A)"
).split()


@pytest.fixture(scope="module")
def violations() -> list[tuple[str, Trace]]:
    """The hw protocol's counterexamples, as the checker finds them."""
    result = check(Config(protocol="hw"), keep_going=True)
    assert {"NoCommittedDataLoss", "NoLogDivergence"} <= set(result.violated)
    return [(violation.invariant, violation.trace) for violation in result.violations]


@pytest.fixture(scope="module")
def leader_epoch_trace() -> Trace:
    """Case D under leader-epoch: exercises ISR shrink and the OffsetsForLeaderEpoch exchange."""
    config = Config(protocol="leader-epoch", messages=3, unclean=True)
    model = ReplicationModel(config)
    return Trace(ReplicationSystem(config), 0, tuple(parse_action(step, model.action_names, config.replicas)
                                  for step in CASE_D_LEADER_EPOCH))


def all_traces(violations, leader_epoch_trace) -> list[tuple[str | None, Trace]]:
    return [*violations, (None, leader_epoch_trace)]


def assert_contains(text: str, *snippets: str) -> None:
    missing = [snippet for snippet in snippets if snippet not in text]
    assert not missing, f"missing from the report: {missing}"


# ------------------------------------------------------------------------- ITF

ITF_VARS = ("replicas", "controller", "written", "crashes", "committed", "consumed", "acked")  # the replication model's


def test_itf_has_every_variable_in_every_state(violations):
    invariant, trace = violations[0]
    data = trace_to_itf(trace, invariant)
    assert data["vars"] == list(ITF_VARS)
    assert data["#meta"]["invariant"] == invariant
    assert data["#meta"]["model"] == "replication"
    assert data["#meta"]["config"] == trace.config.to_dict()
    assert data["#meta"]["initial"] == trace.initial
    assert len(data["states"]) == len(trace) + 1
    for index, state in enumerate(data["states"]):
        assert set(state) == {"#meta", *ITF_VARS}
        assert state["#meta"]["index"] == index
    actions = [state["#meta"]["action"] for state in data["states"]]
    assert actions == ["Init", *map(str, trace.actions)]
    replica = itf_py.value_from_json(data["states"][-1]["replicas"])["A"]
    assert set(replica._fields) == {"log", "unflushed", "hw", "leo", "epochCache", "status", "role", "leaderEpoch",
                                    "leaderId", "response", "remoteLeos", "staleIsr", "reachesZooKeeper",
                                    "reachesBrokers"}


def test_itf_sets_and_maps_are_sorted(violations):
    for invariant, trace in violations:
        for state in trace_to_itf(trace, invariant)["states"]:
            names = [key for key, _ in state["replicas"]["#map"]]
            assert names == sorted(names)
            isr = state["controller"]["isr"]["#set"]
            assert isr == sorted(isr)
            committed = [itf_py.value_from_json(entry) for entry in state["committed"]["#set"]]
            assert committed == sorted(committed)
        assert any(state["committed"]["#set"] for state in trace_to_itf(trace, invariant)["states"])


def test_itf_round_trip_replays_the_same_states(violations, leader_epoch_trace):
    for invariant, trace in all_traces(violations, leader_epoch_trace):
        back = itf_to_trace(json.loads(itf_text(trace, invariant)))
        assert back == trace
        assert back.states() == trace.states()


def test_itf_rejects_a_file_that_does_not_replay(violations):
    invariant, trace = violations[0]
    data = trace_to_itf(trace, invariant)
    data["states"][-1]["written"] = {"#bigint": "7"}
    with pytest.raises(ValueError, match="written"):
        itf_to_trace(data)
    del data["#meta"]["config"]
    with pytest.raises(ValueError, match="not a kafka-mc ITF trace"):
        itf_to_trace(data)


def test_itf_bytes_do_not_depend_on_the_hash_seed(violations, tmp_path):
    invariant, trace = violations[0]
    path = tmp_path / "trace.itf.json"
    path.write_text(itf_text(trace, invariant), encoding="utf-8")
    script = ("import sys\nfrom kafka_mc.counterexamples.itf import itf_text\n"
              "from kafka_mc.counterexamples.reports import read_itf_file\n"
              "sys.stdout.write(itf_text(read_itf_file(sys.argv[1]), sys.argv[2]))")
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        output = subprocess.run([sys.executable, "-c", script, str(path), invariant],
                                env=env, capture_output=True, text=True, check=True).stdout
        assert output == path.read_text(encoding="utf-8")


# ------------------------------------------------------------------------ text

def test_text_is_a_tlc_error_trace(violations):
    invariant, trace = violations[0]
    lines = trace_text(trace, invariant).splitlines()
    assert lines[:3] == [f"Error: Invariant {invariant} is violated.",
                         "Error: The behavior up to this point is:",
                         "State 1: <Initial predicate>"]
    for number, action in enumerate(trace.actions, start=2):
        assert f"State {number}: <{action}>" in lines
    assert sum(line.startswith("State ") for line in lines) == len(trace) + 1
    assert '/\\ controller = [leader |-> "A", epoch |-> 0, isr |-> {"A", "B"}]' in lines
    marker = lines.index(f"\\* {invariant} is violated in this state")
    assert lines[marker - 1] == f"State {len(trace) + 1}: <{trace.actions[-1]}>"
    assert lines[marker + 1] == f"\\* {invariant}: {explain(invariant, trace.states()[-1])}"
    assert lines[marker + 2].startswith("\\* changed: ") and lines[marker + 3].startswith("/\\ ")


def test_text_shows_every_variable_and_marks_what_changed(leader_epoch_trace):
    """The fetch response in flight and the leader's view of the LEOs are shown, so no two states
    of a trace print alike, and each state after the first names the values that changed."""
    lines = trace_text(leader_epoch_trace, None).splitlines()
    states = "\n".join(lines).split("\n\n")
    assert len(set(state.split("\n", 1)[1] for state in states if state)) == len(leader_epoch_trace) + 1
    fetch = lines.index("State 3: <LeaderHandleFetchRequest(B)>")
    assert lines[fetch + 1] == '\\* changed: replicas["A"].remoteLeos["B"], replicas["B"].response'
    replicas = next(line for line in lines[fetch:] if "\"B\" :> [" in line)
    assert 'response |-> [offset |-> 0, hw |-> 0, records |-> <<[msg |-> "m1", epoch |-> 0]>>, outOfRange |-> FALSE]' \
        in replicas


def test_text_without_invariant_has_no_error_lines(leader_epoch_trace):
    text = trace_text(leader_epoch_trace, None)
    assert text.startswith("State 1: <Initial predicate>\n")
    assert "Error" not in text
    assert all(line.startswith("\\* changed: ") for line in text.splitlines() if line.startswith("\\*"))


# -------------------------------------------------------------------- Markdown

def test_markdown_has_a_sequence_diagram_and_a_table_per_step(violations):
    invariant, trace = violations[0]
    markdown = trace_markdown(trace, invariant, "Case L under hw")
    assert markdown.startswith("# Case L under hw\n")
    assert_contains(
        markdown,
        f"**Verdict:** {verdict(invariant, diagnose(trace_steps(trace), invariant))}",
        f"- {invariant}: {explain(invariant, trace.states()[-1])}\n",
        "```mermaid\nsequenceDiagram\n",
        *(f"    participant {participant}\n" for participant in ("Producer", "Controller", "A", "B")),
        "Producer->>A: write m1",
        "B->>A: Fetch(offset=0)",
        "A-->>B: records m1, HW=0",
        "Controller->>B: LeaderAndIsr(leader B, epoch 1)",
        "Note over A: builds response: records none, HW=1<br/>HW 0→1",
        "Note over Controller: leader A→-<br/>ISR {A, B}→{B}",
    )
    for number, action in enumerate(("Init", *map(str, trace.actions))):
        assert f"### Step {number}: {action}\n" in markdown
    assert markdown.count("| replica ") == len(trace) + 1
    verdict_line = next(line for line in markdown.splitlines() if line.startswith("**✗ Invariant violated: "))
    assert invariant in verdict_line


def test_markdown_shows_isr_changes_and_the_leader_epoch_exchange(leader_epoch_trace):
    markdown = trace_markdown(leader_epoch_trace, None, "Case D under leader-epoch")
    assert_contains(
        markdown,
        "A->>Controller: shrink ISR (remove B)",
        "A->>B: OffsetsForLeaderEpoch(epoch 0)",
        "B-->>A: end offset 1",
        "truncated to 1",
        "A--xController: session expired",
        "**Verdict:** No invariant is named as violated.",
    )


# ------------------------------------------------------------------------ HTML

def test_html_parses_and_pictures_every_step(violations, leader_epoch_trace):
    for invariant, trace in all_traces(violations, leader_epoch_trace):
        page = trace_html(trace, invariant, "Counterexample <&> \"quoted\"")
        root = ET.fromstring(page)
        assert root.tag == "html"
        assert root.find("head/title").text == "Counterexample <&> \"quoted\""
        assert len(root.findall(".//figure")) == len(trace) + 1
        sections = root.findall(".//section")
        assert [section.get("id") for section in sections] == [f"step-{n}" for n in range(len(trace) + 1)]
        assert any("violated" in section.get("class") for section in sections)
        assert [script.get("src") for script in root.iter("script")] == [None]  # inline, nothing loaded
        assert "http" not in page
        ticks = root.findall(".//nav[@class='timeline']/a")
        assert [tick.get("href") for tick in ticks] == [f"#step-{n}" for n in range(len(trace) + 1)]


def test_html_shades_committed_records_and_marks_the_leader(violations):
    invariant, trace = violations[0]
    root = ET.fromstring(trace_html(trace, invariant, "Case L"))
    last = root.findall(".//section")[-1]
    rows = last.findall(".//tbody/tr")
    assert [row.find("th").text for row in rows] == ["A", "B"]
    assert rows[1].find("th/span").text == "L"
    assert rows[0].get("class") == "down"
    assert rows[0].find("td/div").get("class") == "record committed"


def test_html_marks_the_cause_strikes_out_removed_records_and_says_why(violations):
    """Case L's shortest form: the cause and the failing step are marked, the record the cause
    removed is struck out there, and the verdict and the failing step say why."""
    invariant, trace = violations[0]
    diagnosis = diagnose(trace_steps(trace), invariant)
    assert diagnosis is not None and diagnosis.cause is not None and diagnosis.why is not None
    root = ET.fromstring(trace_html(trace, invariant, "Case L"))
    sections = {section.get("id"): section for section in root.iter("section")}
    cause = sections[f"step-{diagnosis.cause.number}"]
    assert "cause" in cause.get("class").split()
    assert [section_id for section_id, section in sections.items() if "shows" in section.get("class").split()] == \
        [f"step-{diagnosis.shows}"]
    states = trace.states()
    before, after = states[diagnosis.cause.number - 1], states[diagnosis.cause.number]
    lost = [f"m{r.msg}" for index, replica in enumerate(before.replicas) for r in replica.log
            if r not in after.replicas[index].log]
    assert [box.text for box in cause.iter("div") if box.get("class") == "record removed"] == lost
    assert root.find(".//p[@class='verdict']").text == verdict(invariant, diagnosis)
    why = "".join(sections[f"step-{diagnosis.shows}"].find(".//ul[@class='why']").itertext())
    assert f"{invariant}: {diagnosis.why}" in why


def test_markdown_strikes_out_removed_records_and_marks_the_cause(violations):
    invariant, trace = violations[0]
    diagnosis = diagnose(trace_steps(trace), invariant)
    assert diagnosis is not None and diagnosis.cause is not None
    markdown = trace_markdown(trace, invariant, "Case L")
    cause_section = markdown.split(f"### Step {diagnosis.cause.number}:")[1].split("### Step")[0]
    assert_contains(cause_section, f"**⚑ Cause:** {diagnosis.cause_note(diagnosis.cause.number)}",
                    "Removed at this step: ", "~~m")


# ---------------------------------------------------------------------- writer

def test_writer_writes_regenerates_and_protects_foreign_files(violations, tmp_path):
    invariant, trace = violations[0]
    paths = write_reports(trace, invariant, tmp_path / "out", "case-l", "Case L")
    assert [path.name for path in paths] == ["case-l.itf.json", "case-l.txt", "case-l.md", "case-l.html", "case-l.toml"]
    assert all(path.is_file() for path in paths)
    assert read_itf_file(paths[0]) == trace
    manifest = (tmp_path / "out" / MANIFEST).read_text(encoding="utf-8")
    assert all(path.name in manifest for path in paths)

    assert write_reports(trace, invariant, tmp_path / "out", "case-l", "Case L") == paths

    foreign = tmp_path / "out" / "mine.md"
    foreign.write_text("my notes\n", encoding="utf-8")
    with pytest.raises(ReportConflict, match="mine.md.*choose another path") as raised:
        write_reports(trace, invariant, tmp_path / "out", "mine", "Mine")
    assert isinstance(raised.value, FileExistsError)
    assert foreign.read_text(encoding="utf-8") == "my notes\n"
    assert not (tmp_path / "out" / "mine.txt").exists()

    written = write_reports(trace, invariant, tmp_path / "out", "mine", "Mine", overwrite={foreign})
    assert foreign in written and foreign.read_text(encoding="utf-8").startswith("# Mine")
    assert paths[0].stat().st_mode & 0o777 == 0o666 & ~_umask()  # as open() makes files, not private
    assert {path.name for path in (tmp_path / "out").iterdir() if path.name.startswith(".")} == {MANIFEST}  # no lock left


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write_many(out: str, first: int) -> None:
    for index in range(first, first + 25):
        write_files(Path(out), {f"run-{index}.txt": f"{index}\n"})


def test_concurrent_writers_into_one_folder_lose_no_manifest_entry(tmp_path):
    """Four processes writing 25 files each into one folder: the manifest lists all 100 (its
    update is locked), so a later run may replace every one of them."""
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        pool.starmap(_write_many, [(str(tmp_path), first) for first in (0, 25, 50, 75)])
    listed = {line for line in (tmp_path / MANIFEST).read_text(encoding="utf-8").splitlines() if not line.startswith("#")}
    assert listed == {f"run-{index}.txt" for index in range(100)}
    assert write_files(tmp_path, {f"run-{index}.txt": "again\n" for index in range(100)})


@pytest.mark.parametrize("scenario, snippets", [
    ("diverging-fetch-joins-isr-diverging-epoch", ["builds response: DivergingEpoch(truncate to 0), HW=1"]),
    ("fast-failover-kip-279", ["OffsetsForLeaderEpoch(epoch 1)", "-->>C: end offset 1 of epoch 0"]),
    ("fast-failover-leader-epoch", ["-->>C: end offset 1\n"]),
])
def test_reports_show_each_protocols_own_answers(scenario, snippets):
    """A diverging fetch is shown as such, and an OffsetsForLeaderEpoch answer as the protocol
    gives it (KIP-279 answers an epoch with its end offset; KIP-101 only an offset)."""
    from pathlib import Path

    from kafka_mc.checker.scenario import load_scenario

    trace = load_scenario(Path(__file__).parent.parent / "scenarios" / "findings" / f"{scenario}.toml").trace
    assert_contains(trace_markdown(trace, None, scenario), *snippets)


def test_a_counterexample_written_as_a_scenario_replays_to_the_same_states(violations, tmp_path):
    """`NAME.toml` is the trace as a scenario file: loaded and replayed, it gives the same states,
    and it expects exactly the invariants the trace breaks, so its replay matches."""
    from kafka_mc.checker.scenario import load_scenario, replay

    for invariant, trace in violations:
        write_reports(trace, invariant, tmp_path, invariant, f"{invariant} violated")
        scenario = load_scenario(tmp_path / f"{invariant}.toml")
        assert scenario.trace.states() == trace.states()
        replayed = replay(scenario)
        assert invariant in replayed.first_breaks and replayed.mismatches == []
