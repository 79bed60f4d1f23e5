"""What leaving out the controller's epoch bump on ISR removal changes: every invariant's verdict
and shortest violation, with and without the bump (`model/epoch_bumps.py`), on the history table's
configurations (`kafka_specification_tlc.py history`).

    python benchmarks/epoch_bumps.py [--bounds R,M,C,E ...] [--protocols NAME ...] [--json FILE] [--traces DIR]

Every reachable state of both models on the compiled kernel (`--symmetry`, keep going), the same
properties as the history table, Jason Gustafson's `StrongIsr` and `WeakIsr` included (lowered). A
row reads "same" when both models violate the same invariants at the same shortest lengths;
otherwise it shows both.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tabulate import tabulate

from kafka_mc.checker.kernel import kernel_check
from kafka_mc.control.epoch_bumps import EpochBumpSystem
from kafka_mc.counterexamples.markdown import trace_markdown
from kafka_mc.control.replication import ReplicationSystem
from kafka_mc.model import Config
from kafka_mc.model.protocols import HISTORY, PROTOCOLS
from kafka_mc.properties import PROPERTIES
from kafka_mc.properties.user import user_property

sys.path.insert(0, str(Path(__file__).parent))
from kafka_specification_tlc import HISTORY_BOUNDS  # noqa: E402


def isr_holds_records(state, strong: bool) -> bool:
    """`kafka_specification_tlc.isr_holds_leaders_records`, written so that the kernel lowers it
    (replicas by position, the ISR as a bitmask): every replica acting as leader, each member of
    the ISR (the controller's for StrongIsr, the one that leader believes in for WeakIsr) holds the
    leader's records below the leader's HW."""
    for index, leader in enumerate(state.replicas):
        if not leader.acts_as_leader or not leader.hw:
            continue
        isr = state.controller.isr if strong or index == state.controller.leader else leader.stale_isr
        for member, replica in enumerate(state.replicas):
            if isr >> member & 1:
                log = replica.log
                if len(log) < leader.hw:
                    return False
                for offset in range(leader.hw):
                    if log[offset] != leader.log[offset]:
                        return False
    return True


def strong_isr(state) -> bool:
    return isr_holds_records(state, True)


def weak_isr(state) -> bool:
    return isr_holds_records(state, False)


# the history table's STRONG_ISR and WEAK_ISR, as functions the kernel lowers
STRONG_ISR, WEAK_ISR = user_property(strong_isr, "StrongIsr"), user_property(weak_isr, "WeakIsr")


def compare(config: Config, traces: Path | None = None) -> dict:
    """Both models' complete runs on `config`: distinct states, seconds and shortest violations;
    with `traces`, the report (Markdown) of each shortest violation whose length differs, from both."""
    row = {"protocol": config.protocol, "bounds": [config.replicas, config.messages, config.crashes,
                                                    config.elections]}
    results = {}
    for label, system in (("without", ReplicationSystem), ("with", EpochBumpSystem)):
        started = time.perf_counter()
        result = results[label] = kernel_check(system(config, (*PROPERTIES, STRONG_ISR, WEAK_ISR)), keep_going=True,
                                               symmetry=True)
        row[label] = {"complete": result.complete, "distinct_states": result.stats.distinct_states,
                      "seconds": round(time.perf_counter() - started, 1),
                      "violations": {v.invariant: len(v.trace) for v in result.violations}}
    row["same"] = row["with"]["violations"] == row["without"]["violations"] and \
        row["with"]["complete"] and row["without"]["complete"]
    if traces is not None and not row["same"]:
        traces.mkdir(parents=True, exist_ok=True)
        name = f"{config.protocol}-{'-'.join(map(str, row['bounds']))}"
        for label, result in results.items():
            for violation in result.violations:
                if row["with"]["violations"].get(violation.invariant) != row["without"]["violations"].get(
                        violation.invariant):
                    title = f"{violation.invariant}, {label} the epoch bump ({name}, {len(violation.trace)} steps)"
                    path = traces / f"{name}-{violation.invariant}-{label}-bump.md"
                    path.write_text(trace_markdown(violation.trace, violation.invariant, title))
    return row


def table(rows: list[dict]) -> str:
    def found(run: dict) -> str:
        return ", ".join(f"{name} {length}" for name, length in sorted(run["violations"].items())) or "none"
    return tabulate([[row["protocol"], ", ".join(map(str, row["bounds"])), f"{row['without']['distinct_states']:,}",
                      f"{row['with']['distinct_states']:,}", found(row["without"]),
                      "same" if row["same"] else found(row["with"])] for row in rows],
                    ["protocol", "r, m, c, e", "states (sym.) without", "with", "shortest violations without",
                     "with the bump"], tablefmt="github")


def bounds(text: str) -> tuple[int, int, int, int]:
    try:
        values = tuple(int(part) for part in text.split(","))
    except ValueError:
        values = ()
    if len(values) != 4:
        raise argparse.ArgumentTypeError(f"bounds are R,M,C,E (four integers), not {text!r}")
    return values  # type: ignore[return-value]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bounds", type=bounds, nargs="+", default=list(HISTORY_BOUNDS))
    parser.add_argument("--protocols", nargs="+", choices=tuple(PROTOCOLS),
                        default=[protocol.name for protocol in HISTORY if protocol.bumps_on_isr_removal])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--traces", type=Path, metavar="DIR",
                        help="write the shortest violations whose lengths differ here (Markdown)")
    args = parser.parse_args(argv)
    rows = []
    for replicas, messages, crashes, elections in args.bounds:
        for protocol in args.protocols:
            rows.append(compare(Config(protocol, replicas, messages, crashes, elections), args.traces))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
