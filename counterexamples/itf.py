"""Traces in ITF, the Informal Trace Format of Apalache and Quint, and back, for every model.

The trace `#meta` names the model (the replication model when absent), keeps its configuration
and the initial-state index, and each state's `#meta` the action that led to it, so a file can be
replayed by the model; `itf_to_trace` checks that the replay gives the states the file shows. The
variables are the model's `state_values`, sets sorted and maps keyed in order
(`model.values.sorted_values`), so the same trace gives the same bytes.

A trace another tool wrote (Apalache, Quint, a converted TLC trace) has no kafka-mc `#meta`: it is
read as a trace of the replication model's TLA+ twin (`model/tla/KafkaReplication.tla`), whose
variables it must have (`TWIN_VARIABLES`), and `twin_itf_to_trace` finds, step by step, the model's
action that leads from each state to the next (`twin_view`: a model state as the twin shows it).
Its configuration comes from the caller's settings, the twin's constants where the trace lists them
as ITF `params`, and the trace itself (see `twin_config`).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

import itf_py

from kafka_mc.checker.result import Trace
from kafka_mc.checker.scenario import scenario_models
from kafka_mc.checker.tla_modules import module_name
from kafka_mc.control.replication import ReplicationSystem
from kafka_mc.model import PROTOCOLS, Config, ConfigError, State
from kafka_mc.model.config import upgraded_settings
from kafka_mc.model.shape import ANY, Expect, Required, check_shape, short_repr
from kafka_mc.model.state import (
    FOLLOWER,
    LEADER,
    NO_LEADER,
    NO_ROLE,
    ROLE_NAMES,
    STATUS_NAMES,
    TRUNCATING,
    isr_members,
    replica_name,
)
from kafka_mc.model.values import sorted_values

INIT = "Init"
FORMAT_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"
# What `itf_to_trace` reads of an ITF object (`model.shape.check_shape`); the state variables are
# compared with the replay's as they are, and the configuration with the model's settings.
ACTION_SHAPE = Expect(str, "an action such as \"ProducerWrite(A)\"")
ITF_SHAPE = {
    "#meta": Required({"model": Expect(str, "the name of a model"), "config": Required(dict),
                       "initial": Required(Expect(int, "the index of an initial state")), "*": ANY}),
    "vars": Required([str]),
    "states": Required([{"#meta": Required({"action": Required(ACTION_SHAPE), "*": ANY}), "*": ANY}]),
    "*": ANY,
}


def trace_to_itf(trace: Trace, invariant: str | None) -> dict:
    """The trace as an ITF JSON object."""
    meta: dict[str, Any] = {
        "format": "ITF",
        "format-description": FORMAT_DESCRIPTION,
        "source": "kafka-mc",
        "model": trace.model.name,
        "config": trace.config.to_dict(),
        "initial": trace.initial,
    }
    if trace.start is not None:
        meta["start"] = "the first state is given, not an initial state (a counterexample to induction)"
    if invariant is not None:
        meta["invariant"] = invariant
    states = [
        itf_py.State(meta={"index": index, "action": INIT if action is None else str(action)},
                     values=sorted_values(trace.model, state))
        for index, (action, state) in enumerate(trace.steps())
    ]
    return itf_py.trace_to_json(itf_py.Trace(meta=meta, params=[], vars=list(states[0].values), states=states,
                                             loop=None))


def itf_text(trace: Trace, invariant: str | None) -> str:
    """The ITF JSON as text, the same bytes for the same trace."""
    return json.dumps(trace_to_itf(trace, invariant), indent=2) + "\n"


def itf_to_trace(data: dict, settings: Mapping[str, Any] | None = None) -> Trace:
    """The trace an ITF object written by `trace_to_itf` records, or, for one without kafka-mc's
    `#meta` (`written_by_kafka_mc`), the trace of the model that gives the states of a trace of the
    TLA+ twin (`twin_itf_to_trace`, under `settings`). ValueError when the object lacks the model's
    configuration or the actions, or when replaying it gives other states; SettingError for
    `settings` given with a trace whose `#meta` has its configuration."""
    if not written_by_kafka_mc(data):
        return twin_itf_to_trace(data, settings or {})[0]
    if settings:
        raise SettingError(f"{', '.join(flag_of(name) for name in settings)}: this trace's #meta gives its "
                           "configuration; these settings are for an ITF trace without kafka-mc's #meta")
    try:
        check_shape(data, ITF_SHAPE, toml=False)
        meta = data["#meta"]
        models = scenario_models()
        name = meta.get("model", ReplicationSystem.name)
        if name not in models:
            raise ValueError(f"#meta.model: model {short_repr(name)} is unknown; allowed: {', '.join(models)}")
        model_class, config_class = models[name]
        fields = [field.name for field in dataclasses.fields(config_class)]
        settings = upgraded_settings(meta["config"]) if isinstance(meta["config"], dict) else meta["config"]
        check_shape(settings, {field: ANY for field in fields}, "#meta.config", toml=False)
        try:  # the replication model's traces may be a simulation's, past `check`'s bounds
            config = (Config.for_simulation(**settings) if config_class is Config
                      else config_class(**settings))
        except (ConfigError, ValueError, TypeError) as error:
            raise ValueError(f"#meta.config: {error}") from None
    except ValueError as error:
        raise ValueError(f"not a kafka-mc ITF trace: {error}") from None
    initial = meta["initial"]
    labels = [state["#meta"]["action"] for state in data["states"]]
    if "start" in meta:
        raise ValueError("this ITF trace starts in a given state, not an initial one (a counterexample to "
                         "induction): it has no replay from an initial state")
    if not labels or labels[0] != INIT:
        raise ValueError(f"not a kafka-mc ITF trace: the first state's action must be {INIT!r}")
    model = model_class(config)
    actions = []
    for index, label in enumerate(labels[1:], start=1):
        try:
            actions.append(model.parse_action(label))
        except ValueError as error:
            raise ValueError(f"not a kafka-mc ITF trace: states[{index}].#meta.action: {error}") from None
    count = len(model.initial_states())
    if not 0 <= initial < count:
        raise ValueError(f"not a kafka-mc ITF trace: #meta.initial must be the index of an initial state, from 0 to "
                         f"{count - 1}, not {short_repr(initial)}")
    trace = Trace(model, initial, tuple(actions))
    for index, (state, raw) in enumerate(zip(trace.states(), data["states"])):
        expected = itf_py.state_to_json(itf_py.State(meta={}, values=sorted_values(model, state)))
        differing = [name for name in expected if name != "#meta" and raw.get(name) != expected[name]]
        if differing:
            raise ValueError(f"ITF state {index} ({labels[index]}): replay gives other {', '.join(differing)}")
    return trace


# ------------------------------------------------------- traces of the TLA+ twin, written by other tools

# The twin's variables (model/tla/KafkaReplication.tla), and its CONSTANTS by the Config field they set:
# a trace that lists a constant among its ITF `params` gives its value in every state.
TWIN_VARIABLES = ("replicas", "controller", "written", "crashes", "committed", "acked", "delays", "diskFailures")
# what a trace of the twin may lack, written before the twin had delayed requests or counted disk failures: none
_OPTIONAL_VARIABLES = ("delays", "diskFailures")
TWIN_SETTINGS = ("protocol", "replicas", "messages", "crashes", "elections", "acks", "min_isr", "unclean", "delays",
                 "disk_failures")
TWIN_CONSTANTS = {"MaxMessages": "messages", "MaxCrashes": "crashes", "MaxElections": "elections",
                  "AcksAll": "acks", "MinIsr": "min_isr", "Unclean": "unclean", "MaxDelays": "delays",
                  "MaxDiskFailures": "disk_failures", "MetadataLag": "metadata_lag"}
# Variables that say nothing of the state, left out: Quint's model-based-testing ones (`quint run
# --mbt`: mbt::actionTaken, mbt::nondetPicks) and any whose name starts with `_`.
AUXILIARY = re.compile(r"^(mbt::|_)")
TWIN_SHAPE = {"vars": Required([str]), "states": Required([{"*": ANY}]), "params": [str], "*": ANY}
# A bound not given: the least the trace needs, the most its view reaches (any larger bound replays it alike).
# Disk failures the twin does not count (as many allowed as crashes) reach 0: such a trace needs --disk-failures.
_REACHED = {"messages": "written", "crashes": "crashes", "elections": "controller.epoch", "delays": "delays",
            "disk_failures": "diskFailures"}
_REPLICA_FIELDS = ("log", "hw", "epochs", "status", "role", "epoch", "response", "remoteLeos", "leaderId")
# a replica's delayed fetch, and the controller's AlterPartition in flight: absent from a trace of the twin
# written before it had delayed requests (none in flight)
_DELAY_FIELDS = ("delayedFetch", "delayedFetchStale")
_RESPONSE_FIELDS = ("offset", "hw", "records", "outOfRange")
_CONTROLLER_FIELDS = ("leader", "epoch", "isr")
_PROPOSAL_FIELDS = ("proposal", "reregistered")
# the ISR removals the leader has not read (MetadataLag): absent from a trace written before the twin had them
_UNSEEN_FIELD = "unseen"
_OPTIONAL_CONTROLLER_FIELDS = (*_PROPOSAL_FIELDS, _UNSEEN_FIELD)
# the eligible leader replicas: a field of the twin's controller with EligibleLeaders only (KIP-966), and with
# them the last known leader (KAFKA-15584; absent from a trace written before the twin had it: none)
_ELR_FIELD = "elr"
_LAST_KNOWN_ELR_FIELD = "lastKnownElr"
_NO_LEADER = "none"  # the twin's NoLeader
_STATUSES = STATUS_NAMES[:3]  # up, crashed, offline: the twin has no network failures (no expired session)
_ROLES = {NO_ROLE: "none", LEADER: "leader", TRUNCATING: "truncating", FOLLOWER: "follower"}
_REPLICA_NAME = re.compile(r"^([A-E])(?:_OF_\w+)?$")  # A, or A_OF_REPLICA (an Apalache uninterpreted value)


class SettingError(ValueError):
    """A setting of a trace of the twin that is missing (neither given nor inferable), contradicted by
    the trace, not allowed, or given for a trace whose `#meta` has its configuration. The message
    names the option that sets it (`flag_of`)."""


def flag_of(setting: str) -> str:
    """The command-line option of a setting: `min_isr` -> `--min-isr`."""
    return "--" + setting.replace("_", "-")


def written_by_kafka_mc(data: object) -> bool:
    """Whether an ITF object is kafka-mc's own: its `#meta` names kafka-mc as the source or holds a
    model, configuration or initial state. Anything but an object counts as kafka-mc's (its shape
    check says what is wrong), and so does an object whose `#meta` is there but not an object."""
    if not isinstance(data, dict):
        return True
    meta = data.get("#meta")
    if meta is None:
        return False
    return not isinstance(meta, dict) or meta.get("source") == "kafka-mc" or \
        any(key in meta for key in ("model", "config", "initial"))


def twin_view(state: State) -> dict[str, Any]:
    """A replication-model state as the TLA+ twin shows it, by path (`replicas[A].hw`,
    `controller.isr`, `acked`): what `decode_twin_state` reads from a trace of the twin. The twin
    has no page cache, network failures or `consumed` history, so this leaves out fields that keep
    their initial values in every configuration it models. `controller.elr` is the eligible leader
    replicas (KIP-966), empty where the protocol keeps none (the twin's controller then has no `elr`), and
    `controller.lastKnownElr` the last known leader (KAFKA-15584), as empty there;
    `replicas[A].leaderId` the leader A follows (`Replica.leader_id`), the twin's NoLeader for none;
    `replicas[A].delayedFetch` and `delayedFetchStale` A's fetch in flight (`Replica.delayed_fetch`),
    `controller.proposal` and `controller.reregistered` the AlterPartition in flight, `delays` the
    requests delayed so far, `diskFailures` the disk failures so far where the state counts them,
    `controller.unseen` the ISR removals the leader has not read (`Controller.unseen`)."""
    names = [replica_name(index) for index in range(len(state.replicas))]

    def members(mask: int) -> frozenset:
        return frozenset(names[member] for member in isr_members(mask))

    view: dict[str, Any] = {}
    for name, replica in zip(names, state.replicas):
        at = f"replicas[{name}]"
        response = replica.response
        view[f"{at}.log"] = tuple(tuple(record) for record in replica.log)
        view[f"{at}.hw"] = replica.hw
        view[f"{at}.epochs"] = tuple(tuple(entry) for entry in replica.epochs)
        view[f"{at}.status"] = STATUS_NAMES[replica.status]
        view[f"{at}.role"] = _ROLES.get(replica.role, ROLE_NAMES[replica.role])
        view[f"{at}.epoch"] = replica.epoch
        view[f"{at}.response"] = (None if not response else  # the twin's NoResponse, <<>>
                                  (response.offset, response.hw, tuple(tuple(r) for r in response.records),
                                   response.out_of_range))
        view[f"{at}.remoteLeos"] = tuple(replica.remote_leos) if replica.remote_leos else None  # NoRemoteLeos
        view[f"{at}.leaderId"] = _NO_LEADER if replica.leader_id == NO_LEADER else names[replica.leader_id]
        view[f"{at}.delayedFetch"] = replica.delayed_fetch
        view[f"{at}.delayedFetchStale"] = replica.delayed_fetch_stale
    controller = state.controller
    view["controller.leader"] = _NO_LEADER if controller.leader == NO_LEADER else names[controller.leader]
    view["controller.epoch"] = controller.epoch
    view["controller.isr"] = members(controller.isr)
    view["controller.elr"] = members(controller.elr)
    view["controller.lastKnownElr"] = members(controller.last_known_elr)
    view["controller.proposal"] = members(controller.proposal)
    view["controller.reregistered"] = members(controller.reregistered)
    view["controller.unseen"] = members(controller.unseen)
    view["written"] = state.written
    view["crashes"] = state.crashes
    view["committed"] = frozenset(state.committed)
    view["acked"] = frozenset(msg for msg in range(1, state.acked.bit_length()) if state.acked >> msg & 1)
    view["delays"] = state.delays
    view["diskFailures"] = state.disk_failures
    return view


def decode_twin_state(raw: dict, names: tuple[str, ...], where: str) -> dict[str, Any]:
    """A state of a trace of the twin (its variables in ITF, decoded by `itf_py`) as `twin_view`
    shows a model state; ValueError naming the place (`states[3].replicas[A].log[0].msg`) and what
    the twin has there. Records are ITF objects; sequences arrays (or `#tup`); the functions of the
    replicas `#map`s (or objects keyed by replica); sets `#set`s; integers numbers or `#bigint`s."""
    values = {name: _itf_value(raw[name], f"{where}.{name}") for name in TWIN_VARIABLES if name in raw}
    view: dict[str, Any] = {}
    replicas = _function(values["replicas"], f"{where}.replicas", names)
    for name in names:
        at, here = f"replicas[{name}]", f"{where}.replicas[{name}]"
        fields = _record(replicas[name], here, _REPLICA_FIELDS, _DELAY_FIELDS)
        view[f"{at}.log"] = _records(fields["log"], f"{here}.log")
        view[f"{at}.hw"] = _int(fields["hw"], f"{here}.hw")
        view[f"{at}.epochs"] = tuple(_pair(entry, f"{here}.epochs[{index}]")
                                     for index, entry in enumerate(_seq(fields["epochs"], f"{here}.epochs")))
        view[f"{at}.status"] = _choice(fields["status"], f"{here}.status", _STATUSES)
        view[f"{at}.role"] = _choice(fields["role"], f"{here}.role", tuple(_ROLES.values()))
        view[f"{at}.epoch"] = _int(fields["epoch"], f"{here}.epoch")
        response = fields["response"]
        if _empty(response):
            view[f"{at}.response"] = None
        else:
            parts = _record(response, f"{here}.response", _RESPONSE_FIELDS)
            view[f"{at}.response"] = (_int(parts["offset"], f"{here}.response.offset"),
                                      _int(parts["hw"], f"{here}.response.hw"),
                                      _records(parts["records"], f"{here}.response.records"),
                                      _bool(parts["outOfRange"], f"{here}.response.outOfRange"))
        leos = fields["remoteLeos"]
        if _empty(leos):
            view[f"{at}.remoteLeos"] = None
        else:
            known = _function(leos, f"{here}.remoteLeos", names)
            view[f"{at}.remoteLeos"] = tuple(_int(known[m], f"{here}.remoteLeos[{m}]") for m in names)
        view[f"{at}.leaderId"] = _leader(fields["leaderId"], f"{here}.leaderId", names)
        view[f"{at}.delayedFetch"] = _int(fields.get("delayedFetch", 0), f"{here}.delayedFetch")
        view[f"{at}.delayedFetchStale"] = _bool(fields.get("delayedFetchStale", False), f"{here}.delayedFetchStale")
    raw_controller = values["controller"]
    with_elr = _is_record(raw_controller) and _ELR_FIELD in raw_controller._fields
    controller = _record(raw_controller, f"{where}.controller",
                         (*_CONTROLLER_FIELDS, _ELR_FIELD) if with_elr else _CONTROLLER_FIELDS,
                         (*_OPTIONAL_CONTROLLER_FIELDS, _LAST_KNOWN_ELR_FIELD) if with_elr
                         else _OPTIONAL_CONTROLLER_FIELDS)
    view["controller.leader"] = _leader(controller["leader"], f"{where}.controller.leader", names)
    view["controller.epoch"] = _int(controller["epoch"], f"{where}.controller.epoch")
    view["controller.isr"] = frozenset(_replica(member, f"{where}.controller.isr", names)
                                       for member in _set(controller["isr"], f"{where}.controller.isr"))
    # a twin without eligible leader replicas has no `elr`: none, as the model's Controller.elr = 0
    view["controller.elr"] = frozenset(_replica(member, f"{where}.controller.elr", names)
                                       for member in (_set(controller[_ELR_FIELD], f"{where}.controller.elr")
                                                      if with_elr else ()))
    view["controller.lastKnownElr"] = frozenset(
        _replica(member, f"{where}.controller.lastKnownElr", names)
        for member in _set(controller.get(_LAST_KNOWN_ELR_FIELD, frozenset()), f"{where}.controller.lastKnownElr"))
    for field in _OPTIONAL_CONTROLLER_FIELDS:
        view[f"controller.{field}"] = frozenset(_replica(member, f"{where}.controller.{field}", names)
                                                for member in _set(controller.get(field, frozenset()),
                                                                   f"{where}.controller.{field}"))
    view["written"] = _int(values["written"], f"{where}.written")
    view["crashes"] = _int(values["crashes"], f"{where}.crashes")
    view["committed"] = frozenset(_pair(entry, f"{where}.committed")
                                  for entry in _set(values["committed"], f"{where}.committed"))
    view["acked"] = frozenset(_int(msg, f"{where}.acked") for msg in _set(values["acked"], f"{where}.acked"))
    view["delays"] = _int(values.get("delays", 0), f"{where}.delays")
    view["diskFailures"] = _int(values.get("diskFailures", 0), f"{where}.diskFailures")
    return view


def twin_itf_to_trace(data: dict, settings: Mapping[str, Any]) -> tuple[Trace, str]:
    """The replication model's trace that gives, state for state, the states of an ITF trace of the
    TLA+ twin written by another tool (no kafka-mc `#meta`), and a line saying where each setting of
    its configuration came from (`twin_config`). Each step is the model's action that leads from a
    state to the next: the successors of the model's state are compared with the next state of the
    file, all those that match followed. ValueError naming the place for a value the twin does not
    have there, or the variables it lacks or has too many of, and naming the step, the actions
    enabled there and the state before it for a step that no action makes; SettingError naming the
    option for a setting missing or contradicted."""
    try:
        check_shape(data, TWIN_SHAPE, toml=False)
        states = data["states"]
        _check_variables(data)
        names = _replica_names(states[0])
        views = [decode_twin_state(state, names, f"states[{index}]") for index, state in enumerate(states)]
    except ValueError as error:
        raise ValueError(f"not an ITF trace of kafka-mc's TLA+ twin: {error}") from None
    config, note = twin_config(data, views, names, settings)
    return _replay_twin(ReplicationSystem(config), views, note), note


def twin_config(data: dict, views: list[dict[str, Any]], names: tuple[str, ...],
                settings: Mapping[str, Any]) -> tuple[Config, str]:
    """The configuration a trace of the twin replays under, and a line saying where each setting came
    from. In order: `settings` (the options given); the twin's constants the trace lists as ITF
    `params`; what the trace shows (its replicas; its protocol when `#meta.source` names a variant's
    module, such as KafkaKip279.tla; each bound, the least the trace needs); `check`'s defaults for
    acks, min_isr and unclean. SettingError for a missing protocol, for replicas other than the
    trace's, and for a value the configuration does not allow."""
    unknown = [name for name in settings if name not in TWIN_SETTINGS]
    if unknown:
        raise SettingError(f"{', '.join(map(flag_of, unknown))}: not a setting of the TLA+ twin; it has "
                           f"{', '.join(map(flag_of, TWIN_SETTINGS))}")
    constants = _twin_constants(data)
    defaults = {field.name: field.default for field in dataclasses.fields(Config)}
    values: dict[str, Any] = {}
    origins: dict[str, list[str]] = {}
    for name in TWIN_SETTINGS:
        value: Any
        if name == "replicas":
            if settings.get(name, len(names)) != len(names):
                raise SettingError(f"--replicas {short_repr(settings[name])}: the trace has {len(names)} replicas "
                                   f"({', '.join(names)})")
            value, origin = len(names), "the trace's replicas"
        elif name in settings:
            value, origin = settings[name], "given"
        elif name in constants:
            value, origin = constants[name], "the trace's params"
        elif name == "protocol":
            value, origin = _source_protocol(data), "the trace's #meta.source"
            if value is None:
                raise SettingError(f"the protocol is missing: the trace does not name it (its #meta.source is no "
                                   f"variant's module); give it with --protocol NAME ({', '.join(PROTOCOLS)})")
        elif name in _REACHED:
            value, origin = max(view[_REACHED[name]] for view in views), "the least the trace needs"
        else:
            value, origin = defaults[name], "check's defaults"
        values[name] = value
        origins.setdefault(origin, []).append(name)
    # a leader that reads the metadata late: where the params say so, or the trace shows a removal it has not read
    # (one that never shows any replays alike without the lag); not a setting of `kafka-mc replay`
    lag, origin = constants.get("metadata_lag"), "the trace's params"
    if lag is None:
        lag, origin = any(view["controller.unseen"] for view in views), "the trace's controller.unseen"
    if lag:
        values["metadata_lag"] = lag
        origins.setdefault(origin, []).append("metadata_lag")
    try:
        config = Config.for_simulation(**values)
    except ConfigError as error:
        origin = next(origin for origin, named in origins.items() if error.field in named)
        raise SettingError(f"{flag_of(error.field)}: {error}" + ("" if origin == "given" else f" ({origin})")) from None
    note = ", ".join(", ".join(f"{name}={values[name]}" for name in named) + f" ({origin})"
                     for origin, named in origins.items())
    return config, note


def _replay_twin(model: ReplicationSystem, views: list[dict[str, Any]], note: str) -> Trace:
    """The model's trace through the states `views` shows (see `twin_itf_to_trace`)."""
    # each model state whose twin views are the trace's so far, with how it is reached: (initial, actions)
    frontier: dict[State, tuple[int, tuple]] = {}
    initial_states = model.initial_states()
    for index, state in enumerate(initial_states):
        if twin_view(state) == views[0]:
            frontier.setdefault(state, (index, ()))
    if not frontier:
        leading = [(f"the one with {replica_name(i)} leading", s) for i, s in enumerate(initial_states)]
        label, differing = _closest(leading, views[0])
        raise ValueError(f"the trace's state 0 is no initial state of the model; the closest, {label}, has other "
                         f"{', '.join(differing)}\nThe configuration: {note}\nThe trace's state 0:\n"
                         f"{_view_lines(views[0])}")
    for step in range(1, len(views)):
        following: dict[State, tuple[int, tuple]] = {}
        for state, (initial, actions) in frontier.items():
            for action, successor in model.successors(state):
                if successor not in following and twin_view(successor) == views[step]:
                    following[successor] = (initial, (*actions, action))
        if not following:
            raise ValueError(_not_a_step(model, next(iter(frontier)), views, step, note))
        frontier = following
    initial, actions = next(iter(frontier.values()))
    return Trace(model, initial, actions)


def _not_a_step(model: ReplicationSystem, state: State, views: list[dict[str, Any]], step: int, note: str) -> str:
    """The message for a step of a trace of the twin that no action of the model makes from `state`."""
    before, after = views[step - 1], views[step]
    if before == after:
        reason = f"the trace's state {step} repeats its state {step - 1} (a stuttering step, which the model has not)"
    else:
        changed = [path for path in after if after[path] != before[path]]
        reason = (f"no action of the model leads from the trace's state {step - 1} to its state {step}, which "
                  f"changes {', '.join(changed)}")
    enabled = [(str(action), successor) for action, successor in model.successors(state)]
    if enabled:
        label, differing = _closest(enabled, after)
        where = (f"enabled there: {', '.join(label for label, _ in enabled)}; the closest, {label}, gives other "
                 f"{', '.join(differing)}")
    else:
        where = "no action is enabled there"
    return (f"step {step}: {reason}; {where}\nThe configuration: {note}\n"
            f"The state before it (the trace's state {step - 1}):\n{_view_lines(before)}")


def _closest(candidates: list[tuple[str, State]], view: dict[str, Any]) -> tuple[str, list[str]]:
    """The candidate whose twin view differs from `view` at the fewest paths, and those paths."""
    scored = [(label, [path for path, value in twin_view(state).items() if view.get(path) != value])
              for label, state in candidates]
    return min(scored, key=lambda scored_one: len(scored_one[1]))


def _view_lines(view: dict[str, Any]) -> str:
    """A twin view one path a line, in JSON shaped as the twin's values (records as objects, sets
    sorted, functions of the replicas keyed by replica, <<>> as [])."""
    names = sorted({path[len("replicas["):path.index("]")] for path in view if path.startswith("replicas[")})
    return "\n".join(f"  {path} = {json.dumps(_json(path.rpartition('.')[2], value, names))}"
                     for path, value in view.items())


def _json(field: str, value: Any, names: list[str]) -> Any:
    if value is None:
        return []
    if field in ("log", "records"):
        return [{"msg": msg, "epoch": epoch} for msg, epoch in value]
    if field == "response":
        offset, hw, records, out_of_range = value
        return {"offset": offset, "hw": hw, "records": _json("records", records, names), "outOfRange": out_of_range}
    if field == "remoteLeos":
        return dict(zip(names, value))
    if isinstance(value, frozenset):
        return [list(item) if isinstance(item, tuple) else item for item in sorted(value)]
    if isinstance(value, tuple):
        return [list(item) for item in value]
    return value


def _check_variables(data: dict) -> None:
    """ValueError naming the twin's variables a trace lacks and those it has that the twin has not
    (its `params` and auxiliary variables, `AUXILIARY`, left out), or a state that lacks one."""
    states, params = data["states"], set(data.get("params") or ())
    if not states:
        raise ValueError("it has no states")
    listed = [*data["vars"], *(name for state in states for name in state if name != "#meta")]
    variables = [name for name in dict.fromkeys(listed) if name not in params and not AUXILIARY.match(name)]
    missing = [name for name in TWIN_VARIABLES if name not in variables and name not in _OPTIONAL_VARIABLES]
    extra = [name for name in variables if name not in TWIN_VARIABLES]
    if missing or extra:
        parts = ([f"it lacks {', '.join(missing)}"] if missing else []) + \
                ([f"it has {', '.join(extra)}, which the twin has not"] if extra else [])
        hint = (" (these are the variables of an ITF trace kafka-mc writes, whose #meta, naming the model and "
                "its configuration, is missing here)" if "consumed" in extra else "")
        required = [name for name in TWIN_VARIABLES if name not in _OPTIONAL_VARIABLES]
        raise ValueError(f"its variables must be the twin's, {', '.join(required)} (and {', '.join(_OPTIONAL_VARIABLES)}, "
                         f"which a trace written before the twin had them lacks): {'; '.join(parts)}{hint}")
    for index, state in enumerate(states):
        lacking = [name for name in TWIN_VARIABLES if name not in state and name not in _OPTIONAL_VARIABLES]
        if lacking:
            raise ValueError(f"states[{index}] lacks {', '.join(lacking)}")


def _replica_names(first: dict) -> tuple[str, ...]:
    """The replicas of a trace of the twin, from its first state: A, B, ... (kafka-mc's names)."""
    value = _itf_value(first["replicas"], "states[0].replicas")
    keys = _function(value, "states[0].replicas", None)
    names = tuple(sorted(keys))
    expected = tuple(replica_name(index) for index in range(len(names)))
    if names != expected:
        raise ValueError(f"states[0].replicas: the replicas must be named {', '.join(expected)} (kafka-mc's "
                         f"names, as the twin's Replicas constant), not {', '.join(names)}")
    return names


def _twin_constants(data: dict) -> dict[str, Any]:
    """The settings a trace gives as the twin's constants among its ITF `params`."""
    params, first = data.get("params") or (), data["states"][0]
    found: dict[str, Any] = {}
    for constant, setting in TWIN_CONSTANTS.items():
        if constant not in params:
            continue
        where = f"states[0].{constant}"
        if constant not in first:
            raise ValueError(f"not an ITF trace of kafka-mc's TLA+ twin: {where} is missing (params lists it)")
        try:
            value = _itf_value(first[constant], where)
            found[setting] = (("all" if _bool(value, where) else "1") if constant == "AcksAll"
                              else _bool(value, where) if constant in ("Unclean", "MetadataLag")
                              else _int(value, where))
        except ValueError as error:
            raise ValueError(f"not an ITF trace of kafka-mc's TLA+ twin: {error}") from None
    return found


def _source_protocol(data: dict) -> str | None:
    """The protocol whose variant module `#meta.source` names (`KafkaKip279.tla`, a path to it), or None."""
    meta = data.get("#meta")
    source = meta.get("source") if isinstance(meta, dict) else None
    if not isinstance(source, str):
        return None
    stem = PurePath(source).name.removesuffix(".tla")
    return next((name for name, protocol in PROTOCOLS.items() if module_name(protocol) == stem), None)


# The ITF values of the twin, decoded by itf_py.value_from_json: a record is a named tuple, a sequence a
# list (an array) or a tuple (#tup), a set a frozenset, a function a frozendict (#map), an integer an int.

def _itf_value(raw: Any, where: str) -> Any:
    try:
        return itf_py.value_from_json(raw)
    except (ValueError, TypeError, KeyError) as error:  # a #bigint that is no number, a key no field name, ...
        raise ValueError(f"{where}: not an ITF value ({error})") from None


def _is_record(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(value, "_fields") and not hasattr(type(value), "_itf_variant")


def _empty(value: Any) -> bool:
    """The twin's <<>> (NoResponse, NoRemoteLeos): an empty array, #tup, #map or object."""
    return isinstance(value, (list, tuple, Mapping)) and len(value) == 0


def _int(value: Any, where: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ValueError(f"{where} must be an integer, not {short_repr(value)}")


def _bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    raise ValueError(f"{where} must be a boolean, not {short_repr(value)}")


def _choice(value: Any, where: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed or not isinstance(value, str):
        raise ValueError(f"{where} must be one of {', '.join(map(repr, allowed))}, not {short_repr(value)}")
    return value


def _seq(value: Any, where: str) -> list:
    if isinstance(value, list) or (isinstance(value, tuple) and not hasattr(value, "_fields")):
        return list(value)
    raise ValueError(f"{where} must be a sequence (an array or #tup), not {short_repr(value)}")


def _set(value: Any, where: str) -> frozenset:
    if isinstance(value, frozenset):
        return value
    raise ValueError(f"{where} must be a set (#set), not {short_repr(value)}")


def _pair(value: Any, where: str) -> tuple[int, int]:
    items = _seq(value, where)
    if len(items) != 2:
        raise ValueError(f"{where} must be a pair of integers, not {short_repr(value)}")
    return _int(items[0], where), _int(items[1], where)


def _record(value: Any, where: str, fields: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    """A record's fields (`optional` ones may be absent); ValueError naming those missing and those the
    twin has not."""
    if not _is_record(value):
        raise ValueError(f"{where} must be a record with the fields {', '.join(fields)}, not {short_repr(value)}")
    found = value._asdict()
    missing = [field for field in fields if field not in found]
    extra = [field for field in found if field not in fields and field not in optional]
    if missing or extra:
        parts = ([f"it lacks {', '.join(missing)}"] if missing else []) + \
                ([f"it has {', '.join(extra)}, which the twin has not"] if extra else [])
        raise ValueError(f"{where} must be a record with the fields {', '.join(fields)}: {'; '.join(parts)}")
    return found


def _records(value: Any, where: str) -> tuple[tuple[int, int], ...]:
    """A sequence of the twin's log records, [msg, epoch], as (msg, epoch) pairs."""
    records = []
    for index, item in enumerate(_seq(value, where)):
        fields = _record(item, f"{where}[{index}]", ("msg", "epoch"))
        records.append((_int(fields["msg"], f"{where}[{index}].msg"),
                        _int(fields["epoch"], f"{where}[{index}].epoch")))
    return tuple(records)


def _replica(value: Any, where: str, names: tuple[str, ...] | None, other: str = "") -> str:
    """A replica's name (A, or Apalache's A_OF_REPLICA) as kafka-mc's, one of `names` (any when None)."""
    match = _REPLICA_NAME.match(value) if isinstance(value, str) else None
    if match is None or (names is not None and match.group(1) not in names):
        allowed = (", ".join(names) if names is not None else "A to E") + (f" {other}" if other else "")
        raise ValueError(f"{where} must be a replica ({allowed}), not {short_repr(value)}")
    return match.group(1)


def _leader(value: Any, where: str, names: tuple[str, ...]) -> str:
    """A replica's name or the twin's NoLeader (`controller.leader`, a replica's `leaderId`)."""
    return _NO_LEADER if value == _NO_LEADER else _replica(value, where, names, f"or {_NO_LEADER!r}")


def _function(value: Any, where: str, names: tuple[str, ...] | None) -> dict[str, Any]:
    """A function of the replicas (a #map, or an object keyed by replica) by kafka-mc's replica names;
    with `names`, its domain must be those replicas."""
    if isinstance(value, Mapping):
        items = list(value.items())
    elif _is_record(value):
        items = list(value._asdict().items())
    else:
        raise ValueError(f"{where} must be a function of the replicas (a #map), not {short_repr(value)}")
    function = {_replica(key, f"{where} (a key)", names): item for key, item in items}
    if len(function) != len(items) or (names is not None and set(function) != set(names)):
        replicas = f" ({', '.join(names)})" if names is not None else ""
        raise ValueError(f"{where} must map each replica{replicas} once, not "
                         f"{', '.join(map(str, (key for key, _ in items)))}")
    return function
