"""Users' own properties in the TLA+ twin: a lowered property (`properties.lowering`) as TLA+
operators over the twin's variables, in a module that extends the variant's (`properties_module`).

Each distinct subexpression of a property's two expressions (where it fails, where it would raise)
becomes one LET definition, integers throughout (a truth value is 0 or 1), as the compiled kernel
numbers them (`checker.kernel.user_properties.program`). A state property is an invariant; a
`sometimes` witness is the invariant that it is never reached, so that TLC's violation is where it
is reached; a step property is the action property `[][P]_vars` with the state after the step
primed: TLC checks it on every step that changes the state, which are all the model's steps
(none of its actions leaves a state unchanged, `tests/test_tla_properties.py` checks it).

The twin's states map onto kafka-mc's fields (`properties.expressions.FIELDS`) as follows. Replicas
are TLC model values, which have no order: the module takes them in kafka-mc's order as constants
(`ReplicaA`, `ReplicaB`, ..., set to the model values `A`, `B`, ... by the .cfg), and `ReplicaAt`
gives replica i. A replica set is read as kafka-mc's bitmask (the ELR through KafkaReplication's `Elr`,
empty without `EligibleLeaders`, whose controller has no `elr`), the acknowledged messages as theirs,
statuses and roles as kafka-mc's codes, and a position past a sequence's end or a replica out of
range reads 0, as `properties.expressions.evaluate` does. The fields of network failures and
unflushed writes (`zk_cut`, `peer_cut`, `cuts`, `stale_isr`, `unflushed`) read 0 and `consumed` reads
`committed`: the twin covers only configurations without network failures and with every write
flushed (`tla_twins.tlc_config_text` refuses the others), in which they hold those values in every
reachable state (`tests/test_tla_properties.py` checks it on the model, `tests/test_tla_twin.py` on the
model with the controller's epoch bumps, whose twin lowers a property within the bounds its epochs
keep, `model.epoch_bumps.bounding_config`).

Refused by name (`NotLowered`): a step property that reads the action (the twin's states do not
record which action made a step) and a value that may leave TLC's 32-bit integers.
"""

from __future__ import annotations

import re
from typing import Iterable

from kafka_mc.model import Config
from kafka_mc.model.interface import ALWAYS
from kafka_mc.model.state import replica_name
from kafka_mc.properties import Property
from kafka_mc.properties.expressions import bounds, distinct_subexpressions
from kafka_mc.properties.lowering import Lowered, NotLowered, lower

PROPERTIES_SUFFIX = "Properties"  # the module of variant KafkaHw's users' properties is KafkaHwProperties
TLC_INT = (-(1 << 31), (1 << 31) - 1)
IDENTIFIER = re.compile(r"[A-Za-z0-9_]*[A-Za-z][A-Za-z0-9_]*")
RESERVED = frozenset("""ASSUME ASSUMPTION AXIOM CASE CHOOSE CONSTANT CONSTANTS DOMAIN ELSE ENABLED EXCEPT EXTENDS IF
IN INSTANCE LET LOCAL MODULE OTHER SF_ SUBSET THEN THEOREM UNCHANGED UNION VARIABLE VARIABLES WF_ WITH""".split())

# the helpers of every properties module
HELPERS = r"""
ReplicaCount == Len(ReplicaAt)
IsReplica(i) == i \in 0 .. ReplicaCount - 1
IndexOf(r) == CHOOSE i \in 0 .. ReplicaCount - 1 : ReplicaAt[i + 1] = r
\* a set of replicas as kafka-mc's bitmask: replica i is bit i
ReplicaMask(set) ==
    LET bits[i \in 0 .. ReplicaCount] ==
            IF i = 0 THEN 0 ELSE bits[i - 1] + (IF ReplicaAt[i] \in set THEN 2^(i - 1) ELSE 0)
    IN  bits[ReplicaCount]
\* a set of epochs as kafka-mc's bitmask: epoch e is bit e
RECURSIVE EpochMask(_)
EpochMask(set) == IF set = {} THEN 0
                  ELSE LET e == CHOOSE x \in set : \A y \in set : x <= y IN 2^e + EpochMask(set \ {e})
\* a set of message numbers as kafka-mc's bitmask: message m is bit m
MessageMask(set) ==
    LET bits[m \in 0 .. MaxMessages] ==
            IF m = 0 THEN 0 ELSE bits[m - 1] + (IF m \in set THEN 2^m ELSE 0)
    IN  bits[MaxMessages]
StatusCode(s) == IF s = Up THEN 0 ELSE IF s = Crashed THEN 1 ELSE 2
RoleCode(r) == IF r = NoRole THEN 0 ELSE IF r = Leader THEN 1 ELSE IF r = Truncating THEN 2 ELSE 3
Truth(b) == IF b THEN 1 ELSE 0
\* Python's bit operations on integers of any sign (two's complement): on non-negative ones bit by
\* bit, the others through ~x = -x - 1
RECURSIVE BitAnd(_, _), BitOr(_, _), BitXor(_, _)
BitAnd(a, b) == IF a = 0 \/ b = 0 THEN 0
                ELSE 2 * BitAnd(a \div 2, b \div 2) + Truth(a % 2 = 1 /\ b % 2 = 1)
BitOr(a, b) == IF a = 0 THEN b ELSE IF b = 0 THEN a
               ELSE 2 * BitOr(a \div 2, b \div 2) + Truth(a % 2 = 1 \/ b % 2 = 1)
BitXor(a, b) == IF a = 0 THEN b ELSE IF b = 0 THEN a
                ELSE 2 * BitXor(a \div 2, b \div 2) + Truth(a % 2 # b % 2)
Not(x) == -x - 1
IntAnd(a, b) == IF a >= 0 /\ b >= 0 THEN BitAnd(a, b)
                ELSE IF a >= 0 THEN a - BitAnd(a, Not(b))
                ELSE IF b >= 0 THEN b - BitAnd(b, Not(a))
                ELSE Not(BitOr(Not(a), Not(b)))
IntOr(a, b) == IF a >= 0 /\ b >= 0 THEN BitOr(a, b)
               ELSE IF a >= 0 THEN Not(Not(b) - BitAnd(Not(b), a))
               ELSE IF b >= 0 THEN Not(Not(a) - BitAnd(Not(a), b))
               ELSE Not(BitAnd(Not(a), Not(b)))
IntXor(a, b) == IF a >= 0 /\ b >= 0 THEN BitXor(a, b)
                ELSE IF a >= 0 THEN Not(BitXor(a, Not(b)))
                ELSE IF b >= 0 THEN Not(BitXor(Not(a), b))
                ELSE BitXor(Not(a), Not(b))
"""

# each field as TLA+, from the replica record `rep` (replica fields), the state's variables (primed
# after a step) and the arguments `x`, `y`
_GLOBAL = {
    "leader": "IF {controller}.leader = NoLeader THEN -1 ELSE IndexOf({controller}.leader)",
    "controller_epoch": "{controller}.epoch",
    "isr": "ReplicaMask({controller}.isr)",
    "elr": "ReplicaMask(Elr({controller}))",  # KafkaReplication's Elr: controller.elr with EligibleLeaders, else {}
    "last_known_elr": "ReplicaMask(LastKnownElr({controller}))",  # as Elr: {} without EligibleLeaders
    "unseen": "ReplicaMask({controller}.unseen)",  # always a field of the controller: {} without MetadataLag
    "proposal": "ReplicaMask({controller}.proposal)",  # {} without MaxDelays or MetadataLag, as unseen
    "reregistered": "ReplicaMask({controller}.reregistered)",
    "bumped": "EpochMask(Bumped({controller}))",  # KafkaReplication's Bumped: {} without EpochBump
    "delays": "{delays}",
    "disk_failures": "{diskFailures}",
    "written": "{written}",
    "crashes": "{crashes}",
    "acked": "MessageMask({acked})",
    "committed": "Truth(<<{x}, {y}>> \\in {committed})",
    "consumed": "Truth(<<{x}, {y}>> \\in {committed})",
    "zk_cut": "0", "peer_cut": "0", "cuts": "0",
}
_REPLICA = {
    "leo": "Len({rep}.log)",
    "unflushed": "0",
    "hw": "{rep}.hw",
    "status": "StatusCode({rep}.status)",
    "role": "RoleCode({rep}.role)",
    "epoch": "{rep}.epoch",
    "stale_isr": "0",
    "delayed_fetch": "{rep}.delayedFetch",
    "delayed_fetch_stale": "Truth({rep}.delayedFetchStale)",
    "leader_id": "IF {rep}.leaderId = NoLeader THEN -1 ELSE IndexOf({rep}.leaderId)",
    "log_msg": "IF {y} \\in 0 .. Len({rep}.log) - 1 THEN {rep}.log[{y} + 1].msg ELSE 0",
    "log_epoch": "IF {y} \\in 0 .. Len({rep}.log) - 1 THEN {rep}.log[{y} + 1].epoch ELSE 0",
    "cache_count": "Len({rep}.epochs)",
    "cache_epoch": "IF {y} \\in 0 .. Len({rep}.epochs) - 1 THEN {rep}.epochs[{y} + 1][1] ELSE 0",
    "cache_start": "IF {y} \\in 0 .. Len({rep}.epochs) - 1 THEN {rep}.epochs[{y} + 1][2] ELSE 0",
    "response": "Truth({rep}.response # NoResponse)",
    "response_offset": "IF {rep}.response = NoResponse THEN 0 ELSE {rep}.response.offset",
    "response_hw": "IF {rep}.response = NoResponse THEN 0 ELSE {rep}.response.hw",
    "response_out_of_range": "IF {rep}.response = NoResponse THEN 0 ELSE Truth({rep}.response.outOfRange)",
    "response_count": "IF {rep}.response = NoResponse THEN 0 ELSE Len({rep}.response.records)",
    "response_msg": "IF {rep}.response = NoResponse THEN 0 ELSE IF {y} \\in 0 .. Len({rep}.response.records) - 1 "
                    "THEN {rep}.response.records[{y} + 1].msg ELSE 0",
    "response_epoch": "IF {rep}.response = NoResponse THEN 0 ELSE IF {y} \\in 0 .. Len({rep}.response.records) - 1 "
                      "THEN {rep}.response.records[{y} + 1].epoch ELSE 0",
    "has_remote": "Truth({rep}.remoteLeos # NoRemoteLeos)",
    "remote_leo": "IF {rep}.remoteLeos = NoRemoteLeos \\/ ~IsReplica({y}) THEN 0 "
                  "ELSE {rep}.remoteLeos[ReplicaAt[{y} + 1]]",
}
_OPERATORS = {
    "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "neg": "0 - {0}",
    "bit_and": "IntAnd({0}, {1})", "bit_or": "IntOr({0}, {1})", "bit_xor": "IntXor({0}, {1})",
    "bit_not": "Not({0})",
    "shl": "IF {1} >= 0 THEN {0} * 2^{1} ELSE 0", "shr": "IF {1} >= 0 THEN {0} \\div 2^{1} ELSE 0",
    "eq": "Truth({0} = {1})", "ne": "Truth({0} # {1})", "lt": "Truth({0} < {1})", "le": "Truth({0} <= {1})",
    "and": "Truth({0} # 0 /\\ {1} # 0)", "or": "Truth({0} # 0 \\/ {1} # 0)", "not": "Truth({0} = 0)",
    "ite": "IF {0} # 0 THEN {1} ELSE {2}",
    "min": "IF {0} <= {1} THEN {0} ELSE {1}", "max": "IF {0} >= {1} THEN {0} ELSE {1}",
}
_VARIABLES = ("replicas", "controller", "written", "crashes", "committed", "acked", "delays", "diskFailures")


def replica_constants(config: Config) -> tuple[str, ...]:
    """The constants naming the replicas in kafka-mc's order: `ReplicaA`, `ReplicaB`, ..."""
    return tuple(f"Replica{replica_name(index)}" for index in range(config.replicas))


def properties_module(name: str, variant: str, properties: tuple[Property, ...], config: Config,
                      modules: Iterable[str]) -> str:
    """The text of module `name`, extending `variant`, that states each user's property (a
    `Property` with its Python `predicate`) under its own name. `modules`: the text of the twin's
    other modules, whose names a property's may not take. NotLowered for what cannot be stated,
    ValueError for a name TLA+ cannot take."""
    constants = replica_constants(config)
    taken = defined([*modules, HELPERS]) | set(constants) | {"ReplicaAt"}
    definitions = []
    for prop in properties:
        _check_name(prop.name, taken)
        if prop.on_step:
            _check_name(f"{prop.name}Step", taken)
        predicate = getattr(prop, "predicate", None)
        if predicate is None:
            raise ValueError(f"property {prop.name} has no Python function to state in the TLA+ twin")
        try:
            lowered = lower(predicate, config, prop.name)
            definitions.append(_definition(lowered, prop.kind != ALWAYS, config))
        except NotLowered as error:
            raise NotLowered(f"property {prop.name}: {error}") from None
    lines = [
        f"---- MODULE {name} ----",
        f"(* Users' own properties of {variant}, lowered from their Python functions by kafka-mc   *)",
        "(* (checker/tla_properties.py): generated, do not edit.                            *)",
        f"EXTENDS {variant}, Integers, Sequences, FiniteSets",
        "",
        f"CONSTANTS {', '.join(constants)}  \\* the replicas in kafka-mc's order",
        f"ReplicaAt == <<{', '.join(constants)}>>",
        HELPERS,
        *definitions,
        "====",
    ]
    return "\n".join(lines) + "\n"


def defined(texts: Iterable[str]) -> frozenset[str]:
    """The names TLA+ module texts define or declare: operators, constants, variables."""
    names: set[str] = set()
    for text in texts:
        declaring = False
        for line in text.splitlines():
            code = line.split("\\*")[0]
            match = re.match(r"\s*(?:RECURSIVE\s+)?([A-Za-z_]\w*)\s*(?:\([^)]*\)|\[[^]]*\])?\s*==", code)
            if match:
                names.add(match.group(1))
            keyword = re.match(r"(CONSTANTS?|VARIABLES?)\b(.*)", code)
            if keyword:
                declaring, code = True, keyword.group(2)
            elif not line.strip() or not code.startswith((" ", "\t")):
                declaring = False
            if declaring:
                names.update(re.findall(r"([A-Za-z_]\w*)\s*(?:\(|,|$)", code.strip()))
    return frozenset(names)


def _check_name(name: str, taken: Iterable[str]) -> None:
    if not IDENTIFIER.fullmatch(name) or name in RESERVED or name in taken:
        why = "is defined by the twin's modules" if name in taken else "is not a TLA+ identifier"
        raise ValueError(f"property {name!r} cannot be named in the TLA+ twin: the name {why}; rename the function")


def _definition(lowered: Lowered, witness: bool, config: Config) -> str:
    """The property's TLA+ operator: its distinct subexpressions as LET definitions
    (`expressions.distinct_subexpressions`), then the test."""
    nodes, roots = distinct_subexpressions(lowered.fails, lowered.raises)
    lets: list[str] = []
    names: list[str] = []  # each node's name: a LET definition's, or a constant itself
    known: dict[int, tuple[int, int]] = {}
    for node in nodes:
        expr = node.expr
        kind = expr[0]
        if kind == "action":
            raise NotLowered(f"the step's action (action.{expr[1]}) cannot be stated in the TLA+ twin: its states "
                             "do not record which action made a step")
        least, greatest = bounds(expr, config, known)
        if least < TLC_INT[0] or greatest > TLC_INT[1]:
            raise NotLowered(f"{kind} may reach {least if least < TLC_INT[0] else greatest}, beyond TLC's 32-bit "
                             "integers, so it cannot be stated in the TLA+ twin")
        if kind == "const":
            names.append(str(expr[1]) if expr[1] >= 0 else f"({expr[1]})")
            continue
        operands = [names[number] for number in node.operands]
        text = _field(expr[1], expr[2], operands) if kind == "field" else _OPERATORS[kind].format(*operands)
        names.append(f"uv{len(lets)}")
        lets.append(f"        {names[-1]} == {text}")

    fails, raises = (names[number] for number in roots)
    holds = f"{fails} = 0 /\\ {raises} = 0"
    test = f"~({holds})" if witness else holds
    body = f"    LET\n{chr(10).join(lets)}\n    IN  {test}" if lets else f"    {test}"
    what = "its shortest violation is where it is reached" if witness else "where it fails or would raise"
    if lowered.on_step:
        return (f"\\* {lowered.name}: a step property, {what}\n{lowered.name}Step ==\n{body}\n"
                f"{lowered.name} == [][{lowered.name}Step]_vars\n")
    return f"\\* {lowered.name}: {'never reached' if witness else 'an invariant'}, {what}\n{lowered.name} ==\n{body}\n"


def _field(which: int, field: str, operands: list[str]) -> str:
    """A field of the state (primed after a step, `which` 1) as TLA+."""
    prime = "'" if which else ""
    names = {variable: f"{variable}{prime}" for variable in _VARIABLES}
    if field in _GLOBAL:
        x, y = (operands + ["0", "0"])[:2]
        return _GLOBAL[field].format(x=x, y=y, **names)
    replica, *rest = operands
    rep = f"{names['replicas']}[ReplicaAt[{replica} + 1]]"
    inner = _REPLICA[field].format(rep=rep, y=(rest + ["0"])[0])
    return f"IF IsReplica({replica}) THEN {inner} ELSE 0"
