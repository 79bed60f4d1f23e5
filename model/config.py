"""The bounds and settings of one model-checking run, validated up front."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .protocols import HISTORY, PROTOCOLS, Protocol, register_protocol
from .state import MAX_REPLICAS, MIN_REPLICAS

ACKS = ("all", "1", "0")
BOUNDED_COUNTS = ("messages", "crashes", "elections", "partitions", "delays")
CHECK_COUNT_LIMIT = 9  # what exhaustive checking can afford
SIMULATION_COUNT_LIMIT = 99  # random simulation and Hypothesis walk much further


class ConfigError(ValueError):
    """A configuration value outside what the model supports; `field` names the setting."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Config:
    """One partition's replication, bounded so that exploration terminates.

    `messages`, `crashes`, `elections`, `partitions` and `delays` bound how many producer writes,
    replica crashes, controller leader elections, network failures (a broker cut off
    from ZooKeeper, or from the other brokers) and delayed requests (AlterPartition or fetch) a
    behaviour may contain. The initial
    leader is chosen by the initial state and does not count as an election. With
    `flush` false, appends stay in the page cache until a flush and a crash loses them. Up to
    `disk_failures` of the crashes may also lose the broker's disk (`ReplicaDiskFailure`: it starts
    again with no log, HW checkpoint or epoch cache); each counts as one of the crashes too, so
    there are at most `crashes` of them (`disk_failures` equal to `crashes`: any crash may). A delayed
    AlterPartition (`LeaderSendAlterPartition`) stays in flight while other events happen, until
    the controller handles it (`ControllerHandleAlterPartition`); without delays every ISR change
    reaches the controller at once. A delayed fetch (`FollowerSendDelayedFetch`) stays in flight to
    the leader the same way: its sender waits for it, and if the sender crashes first the leader
    handles it later, from an earlier incarnation (`LeaderHandleStaleFetch`, `stale_fetch`). A
    variant whose leader writes the ISR to ZooKeeper itself (`isr_updates`) has no request to delay.
    With `metadata_lag` (KRaft variants: those whose AlterPartition carries broker epochs, KIP-903) the
    controller's own ISR changes (a failure noticed, an unclean registration) reach the leader when it reads
    them in the metadata log (`LeaderApplyMetadata`), not at once; until then its ISR changes are refused.
    """

    protocol: str = "hw"
    replicas: int = 2
    messages: int = 2
    crashes: int = 2
    elections: int = 1
    acks: str = "all"
    min_isr: int = 1
    unclean: bool = False
    flush: bool = True
    partitions: int = 0
    disk_failures: int = 0
    delays: int = 0
    metadata_lag: bool = False

    count_limit = CHECK_COUNT_LIMIT  # the most of each of BOUNDED_COUNTS (a class constant, not a field)

    @classmethod
    def for_simulation(cls, **fields) -> "Config":
        """A configuration for random simulation and Hypothesis: like `Config(**fields)`, but
        messages, crashes, elections and partitions may go up to SIMULATION_COUNT_LIMIT. Within
        the exhaustive bounds it is a plain Config; beyond them a SimulationConfig."""
        try:
            return cls(**fields)
        except ConfigError as error:
            if error.field not in BOUNDED_COUNTS:
                raise
        return SimulationConfig(**fields)

    def __post_init__(self) -> None:
        check_str("protocol", self.protocol, tuple(PROTOCOLS))
        if self.protocol not in PROTOCOLS:
            raise ConfigError("protocol", f"protocol {self.protocol!r} is unknown; allowed: {', '.join(PROTOCOLS)}")
        check_int("replicas", self.replicas, MIN_REPLICAS, MAX_REPLICAS)
        check_int("messages", self.messages, 0, self.count_limit)
        check_int("crashes", self.crashes, 0, self.count_limit)
        check_int("elections", self.elections, 0, self.count_limit)
        check_str("acks", self.acks, ACKS)
        if self.acks not in ACKS:
            raise ConfigError("acks", f"acks {self.acks!r} is not supported; allowed: {', '.join(ACKS)}")
        check_int("min_isr", self.min_isr, 1, self.replicas)
        check_bool("unclean", self.unclean)
        check_bool("flush", self.flush)
        check_int("partitions", self.partitions, 0, self.count_limit)
        check_int("disk_failures", self.disk_failures, 0, self.count_limit)
        if self.disk_failures > self.crashes:
            raise ConfigError("disk_failures", f"disk_failures {self.disk_failures}: each disk failure is one of "
                                               f"the crashes, so it may be at most crashes ({self.crashes})")
        check_int("delays", self.delays, 0, self.count_limit)
        if self.delays and not PROTOCOLS[self.protocol].sends_alter_partition:
            senders = [name for name, protocol in PROTOCOLS.items() if protocol.sends_alter_partition]
            raise ConfigError("delays", f"delays {self.delays}: under protocol {self.protocol!r} the leader writes "
                                        f"the ISR to ZooKeeper itself, so no AlterPartition request can be delayed; "
                                        f"protocols that send one: {', '.join(senders)}")
        check_bool("metadata_lag", self.metadata_lag)
        if self.metadata_lag and not PROTOCOLS[self.protocol].checks_broker_epochs:
            readers = [name for name, protocol in PROTOCOLS.items() if protocol.checks_broker_epochs]
            raise ConfigError("metadata_lag", f"metadata_lag: protocol {self.protocol!r} is not a KRaft variant, whose "
                                              f"leader reads the controller's ISR changes in the metadata log; "
                                              f"KRaft variants: {', '.join(readers)}")

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def counts_disk_failures(self) -> bool:
        """Whether a state counts its disk failures: only where there are some and the bound can bind
        (fewer than the crashes). Otherwise the crash bound implies it, and a count would only split
        equal states."""
        return 0 < self.disk_failures < self.crashes

    def __reduce__(self):
        """Pickled with its protocol's declaration when that is a user's registered variant, so that
        worker processes and Spark executors, which have not registered it, run the same variant."""
        declaration = PROTOCOLS[self.protocol]
        shipped = None if declaration in HISTORY else declaration
        return _unpickle_config, (type(self), self.to_dict(), shipped)


@dataclass(frozen=True)
class SimulationConfig(Config):
    """Bounds that only random simulation and Hypothesis can afford (see `Config.for_simulation`)."""

    count_limit = SIMULATION_COUNT_LIMIT


def _unpickle_config(kind: type, values: dict, protocol: Protocol | None) -> Config:
    if protocol is not None:
        register_protocol(protocol)
    return kind(**values)


def upgraded_settings(settings: dict) -> dict:
    """`settings` with the form earlier versions wrote read as today's: `replaced_disks` (true: any
    crash may lose its disk) becomes `disk_failures` (the crashes, or 0)."""
    if "replaced_disks" not in settings:
        return settings
    settings = dict(settings)
    replaced = settings.pop("replaced_disks")
    if "disk_failures" in settings:
        raise ConfigError("replaced_disks", "replaced_disks and disk_failures given together; "
                                            "give disk_failures alone (replaced_disks is its earlier form)")
    check_bool("replaced_disks", replaced)
    settings["disk_failures"] = settings.get("crashes", Config.crashes) if replaced else 0
    return settings


def check_int(name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(name, f"{name} must be an integer from {low} to {high}, not {value!r}")


def check_bool(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise ConfigError(name, f"{name} must be true or false, not {value!r}")


def check_str(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if not isinstance(value, str):
        raise ConfigError(name, f"{name} must be a string, one of {', '.join(allowed)}; not {value!r}")
