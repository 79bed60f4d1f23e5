"""Apache Kafka's own replication tests, each at its release tag, restated against the model.

Two kinds, listed in scenarios/kafka-tests/README.md with what the model cannot express:

- Kafka's integration tests (EpochDrivenReplicationProtocolAcceptanceTest, UncleanLeaderElectionTest,
  LogRecoveryTest, LeaderEpochIntegrationTest) are replayable scenarios, scenarios/kafka-tests/*.toml,
  one per test and tag, under the protocol variant of that tag; their checkpoints restate Kafka's
  assertions, and the few assertions a checkpoint cannot hold (record epochs, the controller's epoch,
  an election or a write that must fail) are restated here.
- Kafka's unit tests (LeaderEpochFileCacheTest, ReplicaFetcherThreadTest, AbstractFetcherThreadTest,
  PartitionTest, ISRExpirationTest, ReplicaManagerTest, LeaderEpochIntegrationTest's lookups) are
  parametrized tests of the model's own functions and actions, run under the protocol of the tag.

Every expected value is the one Kafka's assertion names at that tag (the parameter id names the test
method and the tag, the `lines` argument the file and lines); fixtures restate the state Kafka's test
sets up or mocks. A few parameters run a test's steps under an earlier release's code, where that test
did not exist yet, to pin what the fix changed; their ids say so and name the code they read.
Kafka's UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET (-1) are the model's UNKNOWN.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_mc.checker.scenario import documented_scenarios, load_scenario, replay
from kafka_mc.model import PROTOCOLS, Action, Config, Record, Replica, ReplicationModel, State, parse_action
from kafka_mc.model.protocols import HISTORY, KIP_101_LOOKUP, latest_epoch, offset_truncation_state, truncate
from kafka_mc.model.state import FOLLOWER, LEADER, NO_LEADER, NO_ROLE, OFFLINE, TRUNCATING, UNKNOWN, UP, Controller

UNDEFINED = UNKNOWN  # UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET

# the protocol variant of each release tag (model/protocols.py, HISTORY)
VARIANT_AT = {
    "0.10.2.0": "hw",
    "0.11.0.0": "leader-epoch", "1.1.1": "leader-epoch",
    "2.0.0": "kip-279",
    "2.0.1": "kafka-7415", "2.1.0": "kip-320",
    "2.8.0": "diverging-epoch",
    "2.8.1": "kafka-13141", "3.0.0": "kafka-13141",
    "3.5.0": "kafka-14704",
    "3.7.0": "kafka-15583",
    "3.9": "kip-966",  # the 3.9 branch's tests with eligible leader replicas enabled (off by default until 4.1)
}

KAFKA_TESTS = documented_scenarios("kafka-tests")
README = Path(__file__).resolve().parent.parent / "scenarios" / "kafka-tests" / "README.md"


def protocol_at(tag: str):
    return PROTOCOLS[VARIANT_AT[tag]]


def tag_of(path: Path) -> str:
    """Scenario files are named <test>-<tag>.toml."""
    return path.stem.rsplit("-", 1)[1]


# ================================================================================ scenarios

def test_the_kafka_tests_are_shipped_and_cover_every_release_variant():
    assert len(KAFKA_TESTS) >= 25
    variants = {load_scenario(path).config.protocol for path in KAFKA_TESTS}
    assert variants == {protocol.name for protocol in HISTORY}


def test_the_readme_lists_every_kafka_test_scenario():
    text = README.read_text(encoding="utf-8")
    missing = [path.name for path in KAFKA_TESTS if path.name not in text]
    assert missing == []


@pytest.mark.parametrize("path", KAFKA_TESTS, ids=lambda path: path.stem)
def test_kafka_test_scenario_replays_with_kafkas_assertions_holding(path):
    scenario = load_scenario(path)
    tag = tag_of(path)
    assert scenario.config.protocol == VARIANT_AT[tag], "a scenario runs under the variant of its tag"
    assert scenario.source.startswith((f"Apache Kafka {tag}, core/src/test/scala/",
                                       f"Apache Kafka {tag}, metadata/src/test/java/")) and "line" in scenario.source
    assert scenario.description and scenario.checkpoints
    assert all(".scala:" in checkpoint.figure or ".java:" in checkpoint.figure for checkpoint in scenario.checkpoints), \
        "each checkpoint names the Kafka file:line it restates"
    replayed = replay(scenario)
    assert replayed.mismatches == []


# Assertions a checkpoint cannot state, attached to a scenario's checkpoint by its index (in file order).
# latestRecord(broker).partitionLeaderEpoch: the epoch of the last record of each replica
LATEST_RECORD_EPOCH = {
    # EpochDrivenReplicationProtocolAcceptanceTest.shouldFollowLeaderEpochBasicWorkflow, lines 89-90,
    # 112-113, 127-128 (88-89, 111-112, 126-127 at 3.0.0)
    ("epoch-acceptance-basic-workflow-", 0): {"A": 0, "B": 0},
    ("epoch-acceptance-basic-workflow-", 2): {"A": 1, "B": 1},
    ("epoch-acceptance-basic-workflow-", 4): {"A": 2, "B": 2},
}
# LeaderEpochIntegrationTest.messagesHaveLeaderEpoch(broker, epoch, minOffset): every record from
# minOffset on, on every broker, carries the epoch (lines 76 and 91)
RECORD_EPOCHS_FROM = {
    ("leader-epoch-integration-stamped-", 0): (0, 0),
    ("leader-epoch-integration-stamped-", 2): (4, 1),
}
# the controller's leader (None: no leader, -1 in ZooKeeper) and leader epoch
CONTROLLER = {
    ("leader-epoch-integration-stamped-", 1): ("B", 1),  # LeaderEpochIntegrationTest.scala:84-85, epoch 0 -> 1
    ("unclean-election-disabled-", 2): (None, 0),  # UncleanLeaderElectionTest.scala:236, leader -1
    ("epoch-acceptance-divergent-logs-0.11.0.0", 1): (None, 1),  # no leader while 101 is down (lines 163-173)
    ("epoch-acceptance-divergent-logs-2.0.1", 1): (None, 1),
    ("epoch-acceptance-divergent-logs-2.1.0", 1): (None, 1),
    ("elr-clean-election-", 1): ("C", 1),  # ReplicationControlManagerTest.java:1128, leader 2
    ("elr-unclean-shutdown-", 2): (None, 0),  # no leader: the ELR's C is fenced
}
# actions that must not be enabled there: the election or the write Kafka's test expects to fail
NOT_ENABLED = {
    # UncleanLeaderElectionTest.scala:236 (no unclean election) and 239-244 (produceMessage fails)
    ("unclean-election-disabled-", 2): ("ControllerElectLeader(B)", "ProducerWrite(B)"),
    # EpochDrivenReplicationProtocolAcceptanceTest.shouldNotAllowDivergentLogs: 100 restarts outside the
    # ISR with unclean election off, so the ten larger sends (lines 170-173) find no leader
    ("epoch-acceptance-divergent-logs-0.11.0.0", 1): ("ControllerElectLeader(A)", "ProducerWrite(A)"),
    ("epoch-acceptance-divergent-logs-2.0.1", 1): ("ControllerElectLeader(A)", "ProducerWrite(A)"),
    ("epoch-acceptance-divergent-logs-2.1.0", 1): ("ControllerElectLeader(A)", "ProducerWrite(A)"),
}
# partition.isr and partition.elr (KIP-966), as replica names
ISR_AND_ELR = {
    # ReplicationControlManagerTest.java:1150, 1156, 1162 (testEligibleLeaderReplicas_UncleanShutdown)
    ("elr-unclean-shutdown-", 0): ("A", "CD"),
    ("elr-unclean-shutdown-", 1): ("A", "C"),
    ("elr-unclean-shutdown-", 2): ("", "C"),
    # ReplicationControlManagerTest.java:1120 and 1126-1128 (testEligibleLeaderReplicas_CleanElection)
    ("elr-clean-election-", 0): ("A", "CD"),
    ("elr-clean-election-", 1): ("C", "AD"),
    # PartitionTest.scala:2217 (isUnderMinIsr) and 2231 (not), testHighWatermarkAdvanceShouldNotAdvanceWhenUnderMinISR
    ("partition-hw-under-min-isr-", 0): ("AB", ""),
    ("partition-hw-under-min-isr-", 2): ("ABC", ""),
}
# partition.lastKnownElr (KAFKA-15584): the last known leader, as replica names
LAST_KNOWN_ELR = {
    # ReplicationControlManagerTest.java:1151, 1157, 1163 (testEligibleLeaderReplicas_UncleanShutdown): empty while
    # the ISR holds A, then A, the last ISR member, once it is fenced and comes back
    ("elr-unclean-shutdown-", 0): "",
    ("elr-unclean-shutdown-", 1): "",
    ("elr-unclean-shutdown-", 2): "A",
}
EXTRA_CHECKS = sorted({key[0] for table in (LATEST_RECORD_EPOCH, RECORD_EPOCHS_FROM, CONTROLLER, NOT_ENABLED,
                                            ISR_AND_ELR, LAST_KNOWN_ELR) for key in table})


def _states_at_checkpoints(path: Path):
    scenario = load_scenario(path)
    states = scenario.trace.states()
    return scenario, [states[checkpoint.after] for checkpoint in scenario.checkpoints]


def _matching(table: dict, stem: str):
    return [(index, expected) for (prefix, index), expected in table.items() if stem.startswith(prefix)]


@pytest.mark.parametrize("prefix", EXTRA_CHECKS)
def test_kafka_assertions_beyond_checkpoints(prefix):
    paths = [path for path in KAFKA_TESTS if path.stem.startswith(prefix)]
    assert paths, f"no scenario named {prefix}*"
    names = "ABCDE"
    for path in paths:
        scenario, states = _states_at_checkpoints(path)
        model = ReplicationModel(scenario.config)

        def where(index: int) -> str:
            return f"{path.stem}, checkpoint {scenario.checkpoints[index].figure}"

        for index, expected in _matching(LATEST_RECORD_EPOCH, path.stem):
            for name, epoch in expected.items():
                assert states[index].replicas[names.index(name)].log[-1].epoch == epoch, where(index)
        for index, (start, epoch) in _matching(RECORD_EPOCHS_FROM, path.stem):
            for replica in states[index].replicas:
                assert len(replica.log) > start, where(index)
                assert {record.epoch for record in replica.log[start:]} == {epoch}, where(index)
        for index, (leader, epoch) in _matching(CONTROLLER, path.stem):
            controller = states[index].controller
            assert controller.leader == (NO_LEADER if leader is None else names.index(leader)), where(index)
            assert controller.epoch == epoch, where(index)
        for index, (isr, elr) in _matching(ISR_AND_ELR, path.stem):
            controller = states[index].controller
            assert controller.isr == sum(1 << names.index(name) for name in isr), where(index)
            assert controller.elr == sum(1 << names.index(name) for name in elr), where(index)
        for index, last_known in _matching(LAST_KNOWN_ELR, path.stem):
            assert states[index].controller.last_known_elr == sum(1 << names.index(name) for name in last_known), \
                where(index)
        for index, texts in _matching(NOT_ENABLED, path.stem):
            for text in texts:
                action = parse_action(text, model.action_names, scenario.config.replicas)
                assert model.next_state(states[index], action) is None, f"{text} is enabled: {where(index)}"


# ================================================================================ fixtures

def _epoch_at(epochs: tuple, offset: int) -> int:
    current = epochs[0][0] if epochs else 0
    for epoch, start in epochs:
        if start <= offset:
            current = epoch
    return current


def make_replica(epochs=(), leo=0, hw=0, role=FOLLOWER, epoch=0, log=None, remote_leos=(),
                 leader_id=NO_LEADER) -> Replica:
    """A live replica; without `log`, `leo` filler records whose epochs follow the cache."""
    epochs = tuple(tuple(entry) for entry in epochs)
    if log is None:
        log = tuple(Record(100 + offset, _epoch_at(epochs, offset)) for offset in range(leo))
    return Replica(tuple(log), 0, hw, epochs, UP, role, epoch, (), 0, tuple(remote_leos), leader_id)


def make_state(leader: Replica, follower: Replica, epoch: int, isr: int = 0b11) -> State:
    """Replica A leads in `epoch` (the controller's leader), replica B follows."""
    return State((leader, follower), Controller(0, epoch, isr), 0, 0, (), (), 0, 0, 0, 0)


def cache_of(log) -> tuple:
    """The leader-epoch cache that appends of `log` build: an entry at each rise of the record epoch."""
    entries: list[tuple[int, int]] = []
    for offset, record in enumerate(log):
        if not entries or record.epoch > entries[-1][0]:
            entries.append((record.epoch, offset))
    return tuple(entries)


def step(model: ReplicationModel, state: State, text: str) -> State:
    following = model.next_state(state, parse_action(text, model.action_names, 2))
    assert following is not None, f"{text} is not enabled"
    return following


def config_for(tag: str, **fields) -> Config:
    return Config(**{"protocol": VARIANT_AT[tag], "replicas": 2, "messages": 9, "crashes": 2, "elections": 9,
                     **fields})


# ================================================================================ LeaderEpochFileCacheTest

def lookup(protocol, epochs, leo, requested):
    """The leader's OffsetsForLeaderEpoch answer for a follower whose latest epoch is `requested`:
    LeaderEpochFileCache.endOffsetFor as the protocol's lookup binds it."""
    follower = make_replica(() if requested == UNDEFINED else ((requested, 0),))
    return protocol.leader_answer(make_replica(epochs, leo), follower)


def run_cache_program(tag: str, lines: str, program) -> None:
    """Replay a Kafka test's calls on one cache, checking its assertions in order.

    assign(epoch, offset) is a record of `epoch` appended at `offset` (Log.append -> assign);
    elect(epoch, offset) is makeLeader at log end offset `offset`; leo(n) sets the log end offset;
    truncate(offset) is clearAndFlushLatest / truncateFromEnd. Checks: latest, end (endOffsetFor: the
    offset under KIP-101, (epoch, offset) since KIP-279), end_offset (the offset only), entries, entry,
    size."""
    protocol = protocol_at(tag)
    epochs, leo = (), 0
    for number, (op, *args) in enumerate(program, start=1):
        where = f"{tag} {lines}, step {number} {op}{tuple(args)}: cache {list(epochs)}, leo {leo}"
        if op == "assign":
            epochs = protocol.epochs_after_append(epochs, (Record(0, args[0]),), args[1])
        elif op == "elect":
            epochs = protocol.epochs_on_become_leader(epochs, args[0], args[1])
        elif op == "leo":
            leo = args[0]
        elif op == "truncate":
            epochs = protocol.epochs_after_truncate(epochs, args[0])
        elif op == "latest":
            assert latest_epoch(make_replica(epochs)) == args[0], where
        elif op in ("end", "end_offset"):
            requested, expected = args
            epoch, offset = lookup(protocol, epochs, leo, requested)
            actual = offset if op == "end_offset" or protocol.epoch_lookup == KIP_101_LOOKUP else (epoch, offset)
            assert actual == expected, where
        elif op == "entries":
            assert [tuple(entry) for entry in epochs] == args[0], where
        elif op == "entry":
            assert tuple(epochs[args[0]]) == args[1], where
        elif op == "size":
            assert len(epochs) == args[0], where
        else:
            raise ValueError(op)


def end(tag: str, epoch: int, offset: int):
    """endOffsetFor's expected answer: the offset at 0.11 (version 0), (epoch, offset) since 2.0.0."""
    return offset if protocol_at(tag).epoch_lookup == KIP_101_LOOKUP else (epoch, offset)


CACHE_TAGS = ("0.11.0.0", "2.0.0", "2.0.1")
F = "LeaderEpochFileCacheTest.scala:"
def cache_cases():
    cases = []

    def add(method, tag, lines, program, xfail=None):
        marks = [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []
        cases.append(pytest.param(tag, F + lines, program, id=f"LeaderEpochFileCacheTest.{method}@{tag}", marks=marks))

    lines = dict(zip(CACHE_TAGS, ("51-53", "51-53", "52-54")))
    for tag in CACHE_TAGS:
        add("shouldAddEpochAndMessageOffsetToCache", tag, lines[tag],
            [("assign", 2, 10), ("leo", 11), ("latest", 2), ("entry", 0, (2, 10)), ("end", 2, end(tag, 2, 11))])
    lines = dict(zip(CACHE_TAGS, ("70", "70", "65")))
    for tag in CACHE_TAGS:
        add("shouldReturnLogEndOffsetIfLatestEpochRequested", tag, lines[tag],
            [("assign", 2, 11), ("assign", 2, 12), ("leo", 14), ("end", 2, end(tag, 2, 14))])
    lines = dict(zip(CACHE_TAGS, ("86", "89", "80")))
    for tag in CACHE_TAGS:
        add("shouldReturnUndefinedOffsetIfUndefinedEpochRequested", tag, lines[tag],
            [("assign", 2, 11), ("assign", 3, 12), ("end", UNDEFINED, end(tag, UNDEFINED, UNDEFINED))])
    lines = dict(zip(CACHE_TAGS, ("104", "108", "95-96")))
    for tag in CACHE_TAGS:
        add("shouldNotOverwriteLogEndOffsetForALeaderEpochOnceItHasBeenAssigned", tag, lines[tag],
            [("leo", 9), ("assign", 2, 9), ("assign", 2, 10), ("entry", 0, (2, 9))]
            + ([("entries", [(2, 9)])] if tag == "2.0.1" else []))
    for tag, line in (("0.11.0.0", "119"), ("2.0.0", "123")):
        add("shouldAllowLeaderEpochToChangeEvenIfOffsetDoesNot", tag, line,
            [("assign", 2, 9), ("assign", 3, 9), ("entries", [(2, 9), (3, 9)])])
    add("shouldEnforceMonotonicallyIncreasingStartOffsets", "2.0.1", "108",
        [("assign", 2, 9), ("assign", 3, 9), ("entries", [(3, 9)])])
    # the same assignment as makeLeader does it (Partition.makeLeader -> assign at 2.0.1), the reachable path
    cases.append(pytest.param(
        "2.0.1", F + "108", [("assign", 2, 9), ("elect", 3, 9), ("entries", [(3, 9)])],
        id="LeaderEpochFileCacheTest.shouldEnforceMonotonicallyIncreasingStartOffsets@2.0.1 (assign by makeLeader)"))
    lines = dict(zip(CACHE_TAGS, ("132", "136", "119")))
    for tag in CACHE_TAGS:
        add("shouldNotOverwriteOffsetForALeaderEpochOnceItHasBeenAssigned", tag, lines[tag],
            [("assign", 2, 6), ("assign", 2, 10), ("entry", 0, (2, 6))])
    lines = dict(zip(CACHE_TAGS, ("143", "147", "125")))
    for tag in CACHE_TAGS:
        add("shouldReturnUnsupportedIfNoEpochRecorded", tag, lines[tag], [("end", 0, end(tag, UNDEFINED, UNDEFINED))])
    # added with KAFKA-6857 in 1.1.1; at 0.11.0.0 endOffsetFor(UNDEFINED_EPOCH) on an empty cache answered the LEO
    for tag, line in (("1.1.1", "158"), ("2.0.0", "162"), ("2.0.1", "136")):
        add("shouldReturnUnsupportedIfNoEpochRecordedAndUndefinedEpochRequested", tag, line,
            [("leo", 73), ("end", UNDEFINED, end(tag, UNDEFINED, UNDEFINED))])
    for tag, line in (("0.11.0.0", "161"), ("2.0.0", "181")):
        add("shouldReturnUnsupportedIfRequestedEpochLessThanFirstEpoch", tag, line,
            [("assign", 5, 11), ("assign", 6, 12), ("assign", 7, 13), ("end", 4, end(tag, UNDEFINED, UNDEFINED))])
    add("shouldReturnFirstEpochIfRequestedEpochLessThanFirstEpoch", "2.0.1", "150",
        [("assign", 5, 11), ("assign", 6, 12), ("assign", 7, 13), ("end", 4, (4, 11))])
    lines = dict(zip(CACHE_TAGS, ("182", "202", "178")))
    for tag in CACHE_TAGS:
        add("shouldGetFirstOffsetOfSubsequentEpochWhenOffsetRequestedForPreviousEpoch", tag, lines[tag],
            [("assign", 1, 11), ("assign", 1, 12), ("assign", 2, 13), ("assign", 2, 14), ("assign", 3, 15),
             ("assign", 3, 16), ("leo", 17), ("end", 2, end(tag, 2, 15))])
    add("shouldReturnNextAvailableEpochIfThereIsNoExactEpochForTheOneRequested", "0.11.0.0", "198-199",
        [("assign", 0, 10), ("assign", 2, 13), ("assign", 4, 17), ("end", 1, 13), ("end", 2, 17)])
    for tag, line in (("2.0.0", "218-220"), ("2.0.1", "189-191")):
        add("shouldReturnNextAvailableEpochIfThereIsNoExactEpochForTheOneRequested", tag, line,
            [("assign", 0, 10), ("assign", 2, 13), ("assign", 4, 17), ("end", 1, (0, 13)), ("end", 2, (2, 17)),
             ("end", 3, (2, 17))])
    lines = dict(zip(CACHE_TAGS, ("214-215", "235-236", "201-202")))
    for tag in CACHE_TAGS:
        add("shouldNotUpdateEpochAndStartOffsetIfItDidNotChange", tag, lines[tag],
            [("assign", 2, 6), ("assign", 2, 7), ("size", 1), ("entry", 0, (2, 6))])
    lines = dict(zip(CACHE_TAGS, ("230", "251", "213")))
    for tag in CACHE_TAGS:
        add("shouldReturnInvalidOffsetIfEpochIsRequestedWhichIsNotCurrentlyTracked", tag, lines[tag],
            [("leo", 100), ("assign", 2, 100), ("end", 3, end(tag, UNDEFINED, UNDEFINED))])
    lines = dict(zip(CACHE_TAGS, ("246-248", "267-269", "223-225")))
    for tag in CACHE_TAGS:
        add("shouldSupportEpochsThatDoNotStartFromZero", tag, lines[tag],
            [("assign", 2, 6), ("leo", 7), ("end", 2, end(tag, 2, 7)), ("size", 1), ("entry", 0, (2, 6))])
    for tag, line in (("0.11.0.0", "285-295"), ("2.0.0", "306-316")):
        add("shouldNotLetEpochGoBackwardsEvenIfMessageEpochsDo", tag, line,
            [("assign", 1, 5), ("leo", 6), ("assign", 2, 6), ("leo", 7), ("assign", 1, 7), ("leo", 8),
             ("latest", 2), ("end", 1, end(tag, 1, 6)), ("end", 2, end(tag, 2, 8)),
             ("entry", 0, (1, 5)), ("entry", 1, (2, 6))])
    add("shouldEnforceMonotonicallyIncreasingEpochs", "2.0.1", "260-267",
        [("assign", 1, 5), ("leo", 6), ("assign", 2, 6), ("leo", 7), ("assign", 1, 7), ("leo", 8),
         ("latest", 1), ("end", 1, (1, 8)), ("end", 2, (UNDEFINED, UNDEFINED)), ("entry", 0, (1, 7))])
    lines = dict(zip(CACHE_TAGS, ("326-352", "347-373", "289-315")))
    for tag in CACHE_TAGS:
        add("shouldIncreaseAndTrackEpochsAsLeadersChangeManyTimes", tag, lines[tag],
            [("assign", 0, 0), ("assign", 1, 0), ("latest", 1), ("end", 1, end(tag, 1, 0)), ("end", 0, end(tag, 0, 0)),
             ("leo", 5), ("end", 1, end(tag, 1, 5)), ("end", 0, end(tag, 0, 0)),
             ("assign", 2, 5), ("leo", 10), ("end", 2, end(tag, 2, 10)), ("end", 1, end(tag, 1, 5)),
             ("end", 0, end(tag, 0, 0))])
    lines = dict(zip(CACHE_TAGS, ("369-390", "390-411", "326-347")))
    for tag in CACHE_TAGS:
        add("shouldIncreaseAndTrackEpochsAsFollowerReceivesManyMessages", tag, lines[tag],
            [("assign", 0, 0), ("leo", 1), ("assign", 0, 1), ("leo", 2), ("assign", 0, 2), ("leo", 3),
             ("latest", 0), ("end", 0, end(tag, 0, 3)),
             ("assign", 1, 3), ("leo", 4), ("assign", 1, 4), ("leo", 5), ("assign", 1, 5), ("leo", 6),
             ("latest", 1), ("end", 1, end(tag, 1, 6)),
             ("assign", 2, 6), ("leo", 7), ("assign", 2, 7), ("leo", 8), ("assign", 2, 8), ("leo", 9),
             ("latest", 2), ("end", 2, end(tag, 2, 9)), ("end", 0, end(tag, 0, 3)), ("end", 1, end(tag, 1, 6))])
    three = [("assign", 2, 6), ("assign", 3, 8), ("assign", 4, 11)]
    lines = dict(zip(CACHE_TAGS, ("407", "428", "361")))
    for tag in CACHE_TAGS:
        add("shouldDropEntriesOnEpochBoundaryWhenRemovingLatestEntries", tag, lines[tag],
            three + [("truncate", 8), ("entries", [(2, 6)])])
    lines = dict(zip(CACHE_TAGS, ("560-561", "581-582", "487-488")))
    for tag in CACHE_TAGS:
        add("shouldDropEntriesBetweenEpochBoundaryWhenRemovingNewest", tag, lines[tag],
            three + [("truncate", 9), ("latest", 3), ("entries", [(2, 6), (3, 8)])])
    lines = dict(zip(CACHE_TAGS, ("595", "616", "516")))
    for tag in CACHE_TAGS:
        add("shouldNotResetEpochHistoryHeadIfUndefinedPassed", tag, lines[tag],
            three + [("truncate", UNDEFINED), ("size", 3)])
    lines = dict(zip(CACHE_TAGS, ("624", "645", "536")))
    for tag in CACHE_TAGS:
        add("shouldFetchLatestEpochOfEmptyCache", tag, lines[tag], [("latest", UNDEFINED)])
    lines = dict(zip(CACHE_TAGS, ("636", "657", "542")))
    for tag in CACHE_TAGS:
        add("shouldFetchEndOffsetOfEmptyCache", tag, lines[tag], [("end", 7, end(tag, UNDEFINED, UNDEFINED))])
    return cases


@pytest.mark.parametrize("tag, lines, program", cache_cases())
def test_leader_epoch_file_cache(tag, lines, program):
    run_cache_program(tag, lines, program)


@pytest.mark.parametrize("tag, lines", [
    pytest.param("0.11.0.0", F + "266-267", id="LeaderEpochFileCacheTest.shouldPersistEpochsBetweenInstances@0.11.0.0"),
    pytest.param("2.0.0", F + "287-288", id="LeaderEpochFileCacheTest.shouldPersistEpochsBetweenInstances@2.0.0"),
    pytest.param("2.0.1", F + "242-243", id="LeaderEpochFileCacheTest.shouldPersistEpochsBetweenInstances@2.0.1"),
])
def test_the_epoch_cache_survives_a_restart(tag, lines):
    """The leader-epoch-checkpoint is read back by a new cache instance: a crash and restart keep it."""
    model = ReplicationModel(config_for(tag))
    follower = make_replica([(2, 6)], leo=7, epoch=0)
    state = make_state(make_replica([(0, 0)], leo=7, role=LEADER, remote_leos=(UNKNOWN, UNKNOWN)), follower, 0)
    state = step(model, step(model, state, "ReplicaCrash(B)"), "ReplicaRestart(B)")
    assert state.replicas[1].epochs == ((2, 6),), lines


# LeaderEpochIntegrationTest.shouldIncreaseLeaderEpochBetweenLeaderRestarts: one replica (101) bounced
# twice, each bounce raising the epoch by two (leader -1, then the live replica); one record per epoch.
# The model needs two replicas, so the lookups are replayed on the leader's cache as the test builds it.
LEI = "LeaderEpochIntegrationTest.scala:"


def _integration_program(tag):
    if tag == "2.0.1":
        stage1 = [("end", 0, (0, 1))]  # lines 159-161
        stage2 = [("end", 0, (0, 1)), ("end", 1, (0, 1)), ("end", 2, (2, 2))]  # 172-173, 177-178, 184-186
    else:
        stage1 = [("end_offset", 0, 1)]  # lines 156-157
        stage2 = [("end_offset", 0, 1), ("end_offset", 2, 2)]  # 170, 173-174
    stage3 = [("end_offset", 0, 1), ("end_offset", 2, 2), ("end_offset", 4, 3),  # 186, 189, 192-193 (2.0.1: +10)
              ("end_offset", 1, 1), ("end_offset", 3, 2), ("end_offset", 5, UNDEFINED)]  # 208, 211, 214 (+10)
    return ([("elect", 0, 0), ("assign", 0, 0), ("leo", 1)] + stage1
            + [("elect", 2, 1), ("assign", 2, 1), ("leo", 2)] + stage2
            + [("elect", 4, 2), ("assign", 4, 2), ("leo", 3)] + stage3)


@pytest.mark.parametrize("tag, lines", [
    pytest.param(tag, LEI + lines,
                 id=f"LeaderEpochIntegrationTest.shouldIncreaseLeaderEpochBetweenLeaderRestarts@{tag}")
    for tag, lines in (("0.11.0.0", "156-214"), ("2.0.0", "156-214"), ("2.0.1", "159-224"))])
def test_leader_epoch_lookups_between_leader_restarts(tag, lines):
    run_cache_program(tag, lines, _integration_program(tag))


# ================================================================================ truncation decisions

RFT = "ReplicaFetcherThreadTest.scala:"


@pytest.mark.parametrize("lines, follower, leader, expected", [
    # the leader answers 156 (t1p0) and 172 (t2p1) for the follower's epoch 5; follower LEO 200
    pytest.param(RFT + "197", dict(epochs=[(5, 0)], leo=200), dict(epochs=[(5, 0)], leo=156), (156, True),
                 id="ReplicaFetcherThreadTest.shouldTruncateToOffsetSpecifiedInEpochOffsetResponse@0.11.0.0 (t1p0)"),
    pytest.param(RFT + "198", dict(epochs=[(5, 0)], leo=200), dict(epochs=[(5, 0)], leo=172), (172, True),
                 id="ReplicaFetcherThreadTest.shouldTruncateToOffsetSpecifiedInEpochOffsetResponse@0.11.0.0 (t2p1)"),
    # the leader answers UNDEFINED_EPOCH_OFFSET (it has no epoch cache): truncate to the HW, 100, not the LEO 300
    pytest.param(RFT + "241", dict(epochs=[(5, 0)], leo=300, hw=100), dict(epochs=[], leo=300), (100, True),
                 id="ReplicaFetcherThreadTest.shouldTruncateToHighWatermarkIfLeaderReturnsUndefinedOffset@0.11.0.0"),
    # the leader answers 1 to a follower at LEO 0: one exchange, then the partition fetches
    pytest.param(RFT + "335-341", dict(epochs=[(5, 0)], leo=0), dict(epochs=[(5, 0)], leo=1), (0, True),
                 id="ReplicaFetcherThreadTest.shouldMovePartitionsOutOfTruncatingLogState@0.11.0.0"),
    pytest.param(RFT + "140-154", dict(epochs=[(5, 0)], leo=0), dict(epochs=[(5, 0)], leo=1), (0, True),
                 id="ReplicaFetcherThreadTest.shouldFetchLeaderEpochOnFirstFetchOnly@0.11.0.0"),
])
def test_kip_101_truncation_point(lines, follower, leader, expected):
    """ReplicaFetcherThread.maybeTruncate at 0.11.0.0: (the follower's log end offset after truncating,
    whether it fetches next), from the model's truncation_point under leader-epoch."""
    protocol = protocol_at("0.11.0.0")
    follower, leader = make_replica(**follower), make_replica(role=LEADER, **leader)
    offset, complete = protocol.truncation_point(leader, follower)
    assert (truncate(follower, offset, protocol).leo, complete) == expected, lines


# AbstractFetcherThread.getOffsetTruncationState: the leader's answers are the mocked OffsetsForLeaderEpoch
# responses; the follower's cache is one whose endOffsetFor answers what the test mocks for it
# latestEpoch 5, endOffsetFor(4) = endOffsetFor(3) = (3, 120)
SECOND_TIME = dict(epochs=[(3, 0), (5, 120)], leo=200, hw=198)
EPOCH_5 = dict(epochs=[(5, 0)], leo=200, hw=199)


def truncation_cases():
    cases = []
    lines_at = {
        "shouldTruncateToOffsetSpecifiedInEpochOffsetResponse": {"2.0.0": "227-229", "2.0.1": "322-324"},
        "shouldTruncateToOffsetSpecifiedInEpochOffsetResponseIfFollowerHasNoMoreEpochs": {"2.0.0": "278-280"},
        "shouldFetchLeaderEpochSecondTimeIfLeaderRepliesWithEpochNotKnownToFollower": {"2.0.0": "328-350",
                                                                                       "2.0.1": "423-445"},
        "shouldUseLeaderEndOffsetIfInterBrokerVersionBelow20": {"2.0.0": "401-414", "2.0.1": "496-509"},
        "shouldTruncateToInitialFetchOffsetIfLeaderReturnsUndefinedOffset": {"2.0.0": "460", "2.0.1": "555"},
        "shouldMovePartitionsOutOfTruncatingLogState": {"2.0.0": "564-570", "2.0.1": "659-665"},
        "shouldFetchLeaderEpochOnFirstFetchOnlyIfLeaderEpochKnownToBoth": {"2.0.0": "166-177", "2.0.1": "261-272"},
    }
    # (method, partition, follower, [((leader epoch, leader end offset), (LEO after truncating, complete)), ...])
    table = [
        ("shouldTruncateToOffsetSpecifiedInEpochOffsetResponse", "t1p0", EPOCH_5, [((5, 156), (156, True))]),
        ("shouldTruncateToOffsetSpecifiedInEpochOffsetResponse", "t2p1", EPOCH_5, [((5, 172), (172, True))]),
        # the follower's latest epoch is 5 and it has none at or below 4 (the mock: endOffsetFor(4) undefined)
        ("shouldTruncateToOffsetSpecifiedInEpochOffsetResponseIfFollowerHasNoMoreEpochs", "t1p0",
         dict(epochs=[(5, 0)], leo=200, hw=197), [((4, 156), (156, True))]),
        ("shouldTruncateToOffsetSpecifiedInEpochOffsetResponseIfFollowerHasNoMoreEpochs", "t2p1",
         dict(epochs=[(5, 0)], leo=200, hw=197), [((4, 202), (200, True))]),
        # loop 1: the leader answers epoch 4, unknown to the follower: it truncates and asks again
        # (fetchCount 0); loop 2: epoch 3 ends at 101 / 102
        ("shouldFetchLeaderEpochSecondTimeIfLeaderRepliesWithEpochNotKnownToFollower", "t1p0", SECOND_TIME,
         [((4, 155), (120, False)), ((3, 101), (101, True))]),
        ("shouldFetchLeaderEpochSecondTimeIfLeaderRepliesWithEpochNotKnownToFollower", "t1p1", SECOND_TIME,
         [((4, 143), (120, False)), ((3, 102), (102, True))]),
        # a version-0 answer (no epoch): truncate to the leader's offset
        ("shouldUseLeaderEndOffsetIfInterBrokerVersionBelow20", "t1p0", SECOND_TIME, [((UNDEFINED, 155), (155, True))]),
        ("shouldUseLeaderEndOffsetIfInterBrokerVersionBelow20", "t1p1", SECOND_TIME, [((UNDEFINED, 143), (143, True))]),
        # an undefined answer: truncate to the initial fetch offset, the follower's HW 100
        ("shouldTruncateToInitialFetchOffsetIfLeaderReturnsUndefinedOffset", "t1p0",
         dict(epochs=[(5, 0)], leo=300, hw=100), [((UNDEFINED, UNDEFINED), (100, True))]),
        ("shouldMovePartitionsOutOfTruncatingLogState", "t1p0", dict(epochs=[(5, 0)], leo=0),
         [((5, 1), (0, True))]),
        ("shouldFetchLeaderEpochOnFirstFetchOnlyIfLeaderEpochKnownToBoth", "t1p0", dict(epochs=[(5, 0)], leo=0),
         [((5, 1), (0, True))]),
    ]
    for method, partition, follower, rounds in table:
        for tag, lines in lines_at[method].items():
            cases.append(pytest.param(tag, RFT + lines, follower, rounds,
                                      id=f"ReplicaFetcherThreadTest.{method}@{tag} ({partition})"))
    return cases


@pytest.mark.parametrize("tag, lines, follower, rounds", truncation_cases())
def test_offset_truncation_state(tag, lines, follower, rounds):
    """Each OffsetsForLeaderEpoch round: the follower's log end offset after truncating, and whether it
    fetches next (truncationCompleted), from the model's offset_truncation_state under the tag's variant."""
    protocol = protocol_at(tag)
    follower = make_replica(**follower)
    for (leader_epoch, leader_end), expected in rounds:
        offset, complete = offset_truncation_state(leader_epoch, leader_end, follower, protocol.epoch_on_election)
        follower = truncate(follower, offset, protocol)
        assert (follower.leo, complete) == expected, f"{lines}: leader answered ({leader_epoch}, {leader_end})"


# AbstractFetcherThreadTest: a follower reconciling with a leader, through the model's actions
AFT = "AbstractFetcherThreadTest.scala:"


def reconcile(model: ReplicationModel, state: State, limit: int = 12) -> State:
    """The fetcher's doWork loop until the follower's log is the leader's: truncation rounds while it
    truncates, then fetch requests and responses."""
    for _ in range(limit):
        leader, follower = state.replicas
        if follower.log == leader.log and follower.role == FOLLOWER and not follower.response:
            return state
        if follower.role == TRUNCATING:
            state = step(model, state, "FollowerTruncateByLeaderEpoch(B)")
        elif follower.response:
            state = step(model, state, "FollowerHandleFetchResponse(B)")
        else:
            state = step(model, state, "LeaderHandleFetchRequest(B)")
    raise AssertionError(f"no reconciliation in {limit} steps: {state.replicas}")


def told_to_follow(tag: str, leader: Replica, follower: Replica, epoch: int) -> tuple[ReplicationModel, State]:
    """The state after the follower has acted on the LeaderAndIsr of `epoch` (BecomeFollower). Both are in
    the ISR, so that the leader's HW stays where the test sets it (Kafka's mock leader has a fixed HW)."""
    model = ReplicationModel(config_for(tag))
    state = make_state(leader, follower._replace(role=NO_ROLE, epoch=UNKNOWN), epoch)
    return model, step(model, state, "BecomeFollower(B)")


FETCHER_TAGS = (("2.1.0", 0), ("2.8.0", 20), ("3.0.0", 20))  # line offsets of testSimpleFetch/testTruncation


@pytest.mark.parametrize("tag, lines", [
    pytest.param(tag, AFT + f"{123 + shift}-{124 + shift}", id=f"AbstractFetcherThreadTest.testSimpleFetch@{tag}")
    for tag, shift in (("2.1.0", 0), ("2.8.0", 18), ("3.0.0", 18))])
def test_abstract_fetcher_simple_fetch(tag, lines):
    log = (Record(1, 0), Record(2, 0))
    leader = make_replica([(0, 0)], log=log, hw=2, role=LEADER, remote_leos=(UNKNOWN, UNKNOWN))
    model, state = told_to_follow(tag, leader, make_replica(), 0)
    follower = reconcile(model, state).replicas[1]
    assert (follower.leo, follower.hw) == (2, 2), lines


@pytest.mark.parametrize("tag, lines", [
    pytest.param(tag, AFT + f"{277 + shift}-{279 + shift}", id=f"AbstractFetcherThreadTest.testTruncation@{tag}")
    for tag, shift in FETCHER_TAGS])
def test_abstract_fetcher_truncation(tag, lines):
    """Replica a@0 (epoch 0), b@1 (2), c@2 (4); leader a@0 (1), b@1 (3), c@2 (5), HW 2; leader epoch 5.
    Records with the same payload but another epoch are other batches (Kafka compares batches). Lines
    298-299 compare the follower's LEO and HW with the leader's: Kafka's mock leader keeps HW 2, the
    model's leader computes its HW, and at 2.8.0 it takes the first, diverging fetch at offset 3 as the
    follower's LEO and raises its HW to 3 (what KAFKA-13141 fixed), so the HW is compared as the test
    compares it, with the leader's."""
    leader_log = (Record(1, 1), Record(2, 3), Record(3, 5))
    follower_log = (Record(1, 0), Record(2, 2), Record(3, 4))
    leader = make_replica(cache_of(leader_log), log=leader_log, hw=2, role=LEADER, epoch=5,
                          remote_leos=(UNKNOWN, UNKNOWN))
    model, state = told_to_follow(tag, leader, make_replica(cache_of(follower_log), log=follower_log), 5)
    leader, follower = reconcile(model, state).replicas
    assert follower.log == leader_log, lines
    assert follower.leo == leader.leo == 3, lines
    assert follower.hw == leader.hw, lines


@pytest.mark.parametrize("tag, lines", [
    pytest.param("2.1.0", AFT + "348-361", id="AbstractFetcherThreadTest.testFollowerFetchOutOfRangeHigh@2.1.0"),
    pytest.param("2.8.0", AFT + "464-477", id="AbstractFetcherThreadTest.testFollowerFetchOutOfRangeHigh@2.8.0"),
    pytest.param("3.0.0", AFT + "506-519", id="AbstractFetcherThreadTest.testFollowerFetchOutOfRangeHigh@3.0.0"),
])
def test_abstract_fetcher_out_of_range_high(tag, lines):
    """Both logs a@0 (0), b@1 (2), c@2 (4); then the leader's log is cleared without a truncation phase
    (the test's contrivance): the next fetch is out of range and the follower truncates to the leader's
    log end offset, 0. Not restated: logStartOffset (the model has no log start offset)."""
    log = (Record(1, 0), Record(2, 2), Record(3, 4))
    leader = make_replica(cache_of(log), log=log, hw=2, role=LEADER, epoch=4, remote_leos=(UNKNOWN, UNKNOWN))
    model, state = told_to_follow(tag, leader, make_replica(cache_of(log), log=log), 4)
    state = reconcile(model, state)
    assert state.replicas[1].leo == 3, lines  # first assertion
    state = state._replace(replicas=(leader._replace(log=(), epochs=(), hw=0), state.replicas[1]))
    state = step(model, step(model, state, "LeaderHandleFetchRequest(B)"), "FollowerHandleFetchResponse(B)")
    assert (state.replicas[1].leo, state.replicas[1].hw) == (0, 0), lines


@pytest.mark.parametrize("tag, lines", [
    pytest.param("2.8.0", AFT + "826-844", id="AbstractFetcherThreadTest.testDivergingEpochs@2.8.0"),
    pytest.param("3.0.0", AFT + "868-886", id="AbstractFetcherThreadTest.testDivergingEpochs@3.0.0"),
])
def test_abstract_fetcher_diverging_epochs(tag, lines):
    """Replica a@0 (0), b@1 (2), c@2 (4), last fetched epoch 4; leader a@0 (0), b@1 (2), d@2 (5), HW 2.
    The first fetch diverges and leaves the follower at last fetched epoch 2; the logs then reconcile
    with last fetched epoch 5 (verifyLastFetchedEpoch: the follower's latest cached epoch)."""
    follower_log = (Record(1, 0), Record(2, 2), Record(3, 4))
    leader_log = (Record(1, 0), Record(2, 2), Record(4, 5))
    leader = make_replica(cache_of(leader_log), log=leader_log, hw=2, role=LEADER, epoch=5,
                          remote_leos=(UNKNOWN, UNKNOWN))
    model, state = told_to_follow(tag, leader, make_replica(cache_of(follower_log), log=follower_log), 5)
    follower = state.replicas[1]
    assert (follower.role, follower.leo, latest_epoch(follower)) == (FOLLOWER, 3, 4), lines  # Fetching, LEO 3, epoch 4
    state = step(model, step(model, state, "LeaderHandleFetchRequest(B)"), "FollowerHandleFetchResponse(B)")
    assert latest_epoch(state.replicas[1]) == 2, lines
    follower = reconcile(model, state).replicas[1]
    assert follower.log == leader_log and latest_epoch(follower) == 5, lines


@pytest.mark.parametrize("tag, first_hw", [
    pytest.param("3.5.0", 1, id="AbstractFetcherThreadTest.testTruncateOnFetchDoesNotProcessPartitionData@3.5.0"),
    # the test's steps under 3.0.0's processFetchRequest, which takes the response's HW 4 before it truncates
    # to 3 (AbstractFetcherThread.scala:351-377 at 3.0.0): what KAFKA-14704 fixed
    pytest.param("3.0.0", 3, id="AbstractFetcherThreadTest.testTruncateOnFetchDoesNotProcessPartitionData@3.5.0 "
                                "steps under 3.0.0 code"),
])
def test_abstract_fetcher_truncate_on_fetch_does_not_process_partition_data(tag, first_hw):
    """KAFKA-14704 (AbstractFetcherThreadTest.scala:1150-1220 at 3.5.0): replica a@0 (0), b@1 (0), c@2 (2),
    d@3 (4), e@4 (4), f@5 (4), HW 1, last fetched epoch 4; leader a@0 (0), b@1 (0), c@2 (2), g@3 (5), h@4 (5),
    HW 4, epoch 5. The first fetch diverges: the follower truncates to 3 and keeps its HW 1 (lines 1204-1205);
    the logs then reconcile, LEO 5 (line 1218) and last fetched epoch 5 (line 1214). Line 1219's HW 4 is
    Kafka's mock leader's fixed HW: the model's leader computes its own, and the follower's equals it.
    Not restated: the counts of truncate and processPartitionData calls (lines 1202, 1216)."""
    follower_log = (Record(1, 0), Record(2, 0), Record(3, 2), Record(4, 4), Record(5, 4), Record(6, 4))
    leader_log = (Record(1, 0), Record(2, 0), Record(3, 2), Record(7, 5), Record(8, 5))
    leader = make_replica(cache_of(leader_log), log=leader_log, hw=4, role=LEADER, epoch=5,
                          remote_leos=(UNKNOWN, UNKNOWN))
    model, state = told_to_follow(tag, leader, make_replica(cache_of(follower_log), log=follower_log, hw=1), 5)
    follower = state.replicas[1]
    assert (follower.role, follower.leo, latest_epoch(follower)) == (FOLLOWER, 6, 4)  # line 1146: epoch 4
    state = step(model, step(model, state, "LeaderHandleFetchRequest(B)"), "FollowerHandleFetchResponse(B)")
    assert (state.replicas[1].leo, state.replicas[1].hw) == (3, first_hw)
    leader, follower = reconcile(model, state).replicas
    assert follower.log == leader_log and follower.leo == 5 and latest_epoch(follower) == 5
    assert follower.hw == leader.hw


# ReplicaManagerTest.testFollowerStateNotUpdatedIfLogReadFails (KAFKA-13141): leader in epoch 5 with five
# records; a valid fetch at 0, then a fetch at offset 3 whose last fetched epoch (4) diverges
RMT = "ReplicaManagerTest.scala:"


@pytest.mark.parametrize("tag, lines, expected", [
    pytest.param("2.8.1", RMT + "661, 706", 0, id="ReplicaManagerTest.testFollowerStateNotUpdatedIfLogReadFails@2.8.1"),
    pytest.param("3.0.0", RMT + "673, 718", 0, id="ReplicaManagerTest.testFollowerStateNotUpdatedIfLogReadFails@3.0.0"),
    # the test's steps under 2.8.0's ReplicaManager.updateFollowerFetchState (ReplicaManager.scala:1758-1769 at
    # 2.8.0), which records the diverging fetch's offset: the bug KAFKA-13141 fixed
    pytest.param("2.8.0", "ReplicaManager.scala:1758-1769", 3,
                 id="ReplicaManagerTest.testFollowerStateNotUpdatedIfLogReadFails@2.8.1 steps under 2.8.0 code"),
])
def test_a_diverging_fetch_and_the_leaders_view_of_the_follower(tag, lines, expected):
    log = tuple(Record(number, 5) for number in range(1, 6))
    leader = make_replica(cache_of(log), log=log, role=LEADER, epoch=5, remote_leos=(UNKNOWN, UNKNOWN))
    model = ReplicationModel(config_for(tag))
    state = make_state(leader, make_replica(epoch=5), 5)
    assert state.replicas[0].remote_leos[1] == UNKNOWN  # followerReplica.logEndOffset is -1 before any fetch
    state = step(model, state, "LeaderHandleFetchRequest(B)")
    assert state.replicas[0].remote_leos[1] == 0, lines  # the valid fetch at 0
    diverging = make_replica([(4, 0)], log=tuple(Record(number, 4) for number in range(6, 9)), epoch=5)
    state = step(model, state._replace(replicas=(state.replicas[0], diverging)), "LeaderHandleFetchRequest(B)")
    assert state.replicas[1].response.out_of_range, "the leader answers with a diverging epoch"
    assert state.replicas[0].remote_leos[1] == expected, lines


# ================================================================================ ISR rules

PT = "PartitionTest.scala:"


@pytest.mark.parametrize("tag, lines, expected", [
    pytest.param("2.0.1", PT + "126-130", (8, 4), id="PartitionTest.testMakeLeaderUpdatesEpochCache@2.0.1"),
    pytest.param("2.1.0", PT + "117-122", (8, 4), id="PartitionTest.testMakeLeaderUpdatesEpochCache@2.1.0"),
    # the same steps under 2.0.0's Partition.makeLeader, which leaves the cache alone, and its endOffsetFor
    # (LeaderEpochFileCache.scala:109 at 2.0.0): epoch 8 is newer than the cache's latest
    pytest.param("2.0.0", "LeaderEpochFileCache.scala:109", (UNDEFINED, UNDEFINED),
                 id="PartitionTest.testMakeLeaderUpdatesEpochCache@2.0.1 steps under 2.0.0 code"),
])
def test_make_leader_updates_epoch_cache(tag, lines, expected):
    """Two records in epoch 0, two in epoch 5 (LEO 4), then makeLeader in epoch 8:
    lastOffsetForLeaderEpoch(8) is (8, 4)."""
    protocol = protocol_at(tag)
    epochs = ()
    for offset, epoch in enumerate((0, 0, 5, 5)):
        epochs = protocol.epochs_after_append(epochs, (Record(offset + 1, epoch),), offset)
    epochs = protocol.epochs_on_become_leader(epochs, 8, 4)
    leader = make_replica(epochs, leo=4, role=LEADER, epoch=8)
    assert leader.leo == 4
    assert lookup(protocol, leader.epochs, leader.leo, 8) == expected, lines


# PartitionTest.testFollowerDoesNotJoinISRUntilCaughtUpToOffsetWithinCurrentLeaderEpoch: leader epoch 8,
# batches of 2 and 3 records (LEO 5), HW 1; makeFollower(9) and makeLeader(10) at LEO 5; a batch of 2 in
# epoch 10. Follower 1, outside the ISR, fetches at 0, 1 (the HW) and 5 (the epoch's start).
JOIN_LEADER = dict(epochs=[(8, 0), (10, 5)], leo=7, hw=1, role=LEADER, epoch=10)


@pytest.mark.parametrize("tag, lines, fetch_offset, joins", [
    *[pytest.param(tag, PT + lines, offset, joins, id=f"PartitionTest.testFollowerDoesNotJoinISR"
                   f"UntilCaughtUpToOffsetWithinCurrentLeaderEpoch@{tag} (fetch at {offset})")
      for tag, at in (("2.0.1", ("341", "347")), ("2.1.0", ("647", "653")))
      for offset, joins, lines in ((0, False, at[0]), (1, False, at[0]), (5, True, at[1]))],
    # the same fetch under 2.0.0's Partition.maybeExpandIsr (Partition.scala:405 at 2.0.0): the HW alone
    pytest.param("2.0.0", "Partition.scala:405", 1, True,
                 id="PartitionTest.testFollowerDoesNotJoinISRUntilCaughtUpToOffsetWithinCurrentLeaderEpoch@2.0.1 "
                    "steps under 2.0.0 code (fetch at 1)"),
])
def test_isr_join(tag, lines, fetch_offset, joins):
    assert protocol_at(tag).may_join_isr(make_replica(**JOIN_LEADER), fetch_offset) is joins, lines


ISR = "ISRExpirationTest.scala:"
NO_CLOCK = (
    "Before KAFKA-7152 a follower at the leader's LEO is dropped once replica.lag.time.max.ms passes without a fetch "
    "(`isr_shrink = 'lag-time'`); the model has no clock, so such a follower may be dropped at any moment, and it "
    "cannot say, as Kafka's test does right after the follower's fetch, that the lag time has not passed yet")


def _isr_case(tag, line, method, leader_leo, follower_leo, out_of_sync, note=""):
    caught_up = leader_leo == follower_leo
    reason = NO_CLOCK if caught_up and not out_of_sync and protocol_at(tag).drops_caught_up_followers else None
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(tag, ISR + line, leader_leo, follower_leo, out_of_sync,
                        id=f"ISRExpirationTest.{method}@{tag}{note}", marks=marks)


@pytest.mark.parametrize("tag, lines, leader_leo, follower_leo, out_of_sync", [
    # 0.11.0.0 and 2.0.1: the stuck follower caught up to 15 (the leader's LEO) and stopped fetching; the
    # one that never fetched was caught up at 0 at setup
    *[case for tag, at in (("0.11.0.0", ("98", "118", "170", "184")), ("2.0.1", ("102", "122", "174", "188")))
      for case in (
          _isr_case(tag, at[0], "testIsrExpirationForStuckFollowers", 15, 15, True),
          _isr_case(tag, at[1], "testIsrExpirationIfNoFetchRequestMade", 0, 0, True),
          _isr_case(tag, at[2], "testIsrExpirationForSlowFollowers", 15, 11, True, " (at 11)"),
          _isr_case(tag, at[3], "testIsrExpirationForSlowFollowers", 15, 15, False, " (at 15)"))],
    # 2.1.0: the leader's LEO is 20 (leaderLogEndOffset)
    _isr_case("2.1.0", "103", "testIsrExpirationForStuckFollowers", 20, 19, True),
    _isr_case("2.1.0", "123", "testIsrExpirationIfNoFetchRequestMade", 20, 0, True),
    _isr_case("2.1.0", "175", "testIsrExpirationForSlowFollowers", 20, 19, True, " (at 19)"),
    _isr_case("2.1.0", "189", "testIsrExpirationForSlowFollowers", 20, 20, False, " (at 20)"),
    _isr_case("2.1.0", "224", "testIsrExpirationForCaughtUpFollowers", 20, 20, False),
])
def test_isr_expiration(tag, lines, leader_leo, follower_leo, out_of_sync):
    """getOutOfSyncReplicas once replica.lag.time.max.ms has passed without the follower catching up:
    whether the model's LeaderShrinkIsr may drop the follower (time is abstract in the model: a
    follower that may be dropped may be dropped at any moment)."""
    model = ReplicationModel(config_for(tag))
    leader = make_replica([(0, 0)], leo=leader_leo, hw=follower_leo, role=LEADER,
                          remote_leos=(UNKNOWN, follower_leo))
    follower = make_replica([(0, 0)] if follower_leo else [], leo=follower_leo, hw=follower_leo)
    state = make_state(leader, follower, 0)
    dropped = model.next_state(state, Action("LeaderShrinkIsr", 1))
    assert (dropped is not None) is out_of_sync, lines


@pytest.mark.parametrize("tag, lines, follower_epoch, leader_epoch, becomes_follower", [
    pytest.param("2.0.1", PT + "263", 1, 3, True,
                 id="PartitionTest.testMakeFollowerWithNoLeaderIdChange@2.0.1 (epoch 1 -> 3)"),
    pytest.param("2.0.1", PT + "267", 3, 4, False,
                 id="PartitionTest.testMakeFollowerWithNoLeaderIdChange@2.0.1 (epoch 3 -> 4)"),
    pytest.param("2.0.1", PT + "271", 4, 4, False,
                 id="PartitionTest.testMakeFollowerWithNoLeaderIdChange@2.0.1 (epoch 4 -> 4)"),
    *[pytest.param(tag, PT + lines, old, new, expected,
                   id=f"PartitionTest.testMakeFollowerWithNoLeaderIdChange@{tag} (epoch {old} -> {new})")
      for tag, (first, second) in (("2.1.0", ("572", "577")), ("2.8.0", ("895", "905")), ("3.0.0", ("857", "867")))
      for old, new, expected, lines in ((1, 4, True, first), (4, 4, False, second))],
])
def test_make_follower_with_no_leader_id_change(tag, lines, follower_epoch, leader_epoch, becomes_follower):
    """A LeaderAndIsr naming the leader the replica already follows (broker 1, here A): makeFollower
    returns whether the replica does the become-follower steps (truncation, a new fetcher)."""
    model = ReplicationModel(config_for(tag))
    leader = make_replica([(0, 0)], leo=1, role=LEADER, epoch=leader_epoch, remote_leos=(UNKNOWN, UNKNOWN))
    follower = make_replica([(0, 0)], leo=1, epoch=follower_epoch, leader_id=0)
    state = make_state(leader, follower, leader_epoch)
    after = model.next_state(state, Action("BecomeFollower", 1))
    # makeFollower's false: no LeaderAndIsr acted on (the same epoch) or a skipped one (the epoch only taken)
    acted = after is not None and after.replicas[1] != follower._replace(epoch=leader_epoch)
    assert acted is becomes_follower, lines


# PartitionChangeBuilderTest on the 3.9 branch (the 3.9.0-rc3 tag), ELR enabled, min ISR 3: brokers 1 to 4
# are replicas A to D. Each case: the partition's ISR and ELR, the builder's target ISR (None: unchanged),
# the unclean-shutdown replicas, and the ELR Kafka asserts.
PCB = "PartitionChangeBuilderTest.java:"


@pytest.mark.parametrize("lines, isr, elr, target, unclean, expected", [
    pytest.param(PCB + "887", "ABCD", "", "AB", "", "CD", id="testEligibleLeaderReplicas_IsrShrinkBelowMinISR@3.9"),
    pytest.param(PCB + "937", "AB", "C", "ABC", "", "", id="testEligibleLeaderReplicas_IsrExpandAboveMinISR@3.9"),
    pytest.param(PCB + "985", "A", "C", "AD", "", "C", id="testEligibleLeaderReplicas_IsrAddNewMemberNotInELR@3.9"),
    pytest.param(PCB + "1038", "A", "BC", None, "C", "B",
                 id="testEligibleLeaderReplicas_RemoveUncleanShutdownReplicasFromElr@3.9"),
    pytest.param(PCB + "1210", "ABCD", "", "", "", "ABCD", id="testEligibleLeaderReplicas_IsrCanShrinkToZero@3.9"),
])
def test_eligible_leader_replicas_follow_the_isr(lines, isr, elr, target, unclean, expected):
    mask = lambda names: sum(1 << "ABCD".index(name) for name in names)  # noqa: E731
    model = ReplicationModel(Config("kip-966", replicas=4, min_isr=3))
    controller = Controller(0, 100, mask(isr), 0, mask(elr))
    changed = model._isr_change(controller, mask(isr if target is None else target), mask(unclean))
    assert changed.elr == mask(expected), lines
    # the last known leader only where the ISR becomes empty: the leader, 1 (IsrCanShrinkToZero, line 1218)
    assert changed.last_known_elr == (mask("A") if target == "" else 0), lines


def test_the_last_known_leader_is_elected_while_the_isr_and_the_elr_are_empty():
    """PartitionChangeBuilderTest on the 3.9 branch: testEligibleLeaderReplicas_ElectLastKnownLeader (lines
    1229-1267): ISR and ELR empty, last known ELR {1}, no leader, every replica acceptable: 1 leads, the only
    ISR member (an unclean election: RECOVERING), the last known ELR cleared; and
    testEligibleLeaderReplicas_ElectLastKnownLeaderShouldFail (lines 1269-1302): ISR empty, ELR {3} (not
    acceptable), last known ELR {1}: no change, since the ELR is not empty. Brokers 1 to 4 are A to D; the
    model elects in a step of its own, only a live replica."""
    model = ReplicationModel(Config("kip-966", replicas=4, messages=0, crashes=1, elections=1, min_isr=3))
    state = model.initial_states()[0]
    leaderless = state._replace(controller=state.controller._replace(leader=NO_LEADER, isr=0, elr=0,
                                                                     last_known_elr=0b0001))
    assert [model.controller_elect_leader(leaderless, i) is None for i in range(4)] == [False, True, True, True]
    elected = model.controller_elect_leader(leaderless, 0).controller
    assert (elected.leader, elected.isr, elected.elr, elected.last_known_elr) == (0, 0b0001, 0, 0)
    with_elr = leaderless._replace(controller=leaderless.controller._replace(elr=0b0100))
    with_elr = model.with_replica(with_elr, 2, with_elr.replicas[2]._replace(status=OFFLINE))  # 3 not acceptable
    assert all(model.controller_elect_leader(with_elr, i) is None for i in range(4))


def test_an_elr_member_is_elected_while_the_isr_is_empty():
    """PartitionChangeBuilderTest.testEligibleLeaderReplicas_ElrCanBeElected@3.9 (lines 1121-1161): ISR {1},
    ELR {3}, replica 1 offline, target ISR empty: 3 leads, ISR {3}, ELR {1}. The model fences 1 (a crash the
    controller notices) and elects in a step of its own; replica 2, live but in neither, cannot be elected."""
    model = ReplicationModel(Config("kip-966", replicas=4, messages=0, crashes=1, elections=1, min_isr=3))
    state = model.initial_states()[0]
    state = state._replace(controller=state.controller._replace(isr=0b0001, elr=0b0100))
    state = model.controller_notice_failure(model.replica_crash(state, 0), 0)
    assert (state.controller.leader, state.controller.isr, state.controller.elr) == (NO_LEADER, 0, 0b0101)
    assert model.controller_elect_leader(state, 1) is None
    elected = model.controller_elect_leader(state, 2).controller
    assert (elected.leader, elected.isr, elected.elr) == (2, 0b0100, 0b0001)
