"""What a leader that reads the metadata late changes under KIP-966: every configuration of a grid checked
with and without `--metadata-lag`, side by side.

For `kip-966` (the only KRaft variant), every combination of 2 or 3 replicas, min.insync.replicas 1 or 2,
1 or 2 messages (with 3 replicas: 1), 1 or 2 crashes, 1 or 2 elections, 0 or 1 disk failure (flushed writes
only), flushed or unflushed writes, 0 or 1 delayed request (with 3 replicas: with 1 crash only) and 0 or 1
network failure is explored completely by the compiled kernel (one thread, symmetry), once as it is and once with the
lag; a row gives both state counts and the shortest violation of each invariant. The table ends with how
many configurations differ in their verdicts or shortest lengths.

    python benchmarks/metadata_lag.py                  # a Markdown table on stdout
    python benchmarks/metadata_lag.py --replicas 2     # the 2-replica part of the grid only
    python benchmarks/metadata_lag.py --out FILE.json  # also the rows as JSON
"""

from __future__ import annotations

import argparse
import itertools
import json
from dataclasses import replace
from pathlib import Path

from tabulate import tabulate

from kafka_mc.checker.kernel import kernel_check
from kafka_mc.model import Config


def grid(replica_counts: tuple[int, ...]) -> list[Config]:
    configs = []
    for replicas, min_isr, messages, crashes, elections, disk_failures, flush, delays, failures in itertools.product(
            replica_counts, (2, 1), (1, 2), (1, 2), (1, 2), (0, 1), (True, False), (0, 1), (0, 1)):
        if min_isr > replicas or (disk_failures and not flush):
            continue
        if replicas == 3 and (messages > 1 or delays and crashes > 1):
            continue
        configs.append(Config("kip-966", replicas=replicas, min_isr=min_isr, messages=messages, crashes=crashes,
                              elections=elections, disk_failures=disk_failures, flush=flush, delays=delays,
                              partitions=failures))
    return configs


def shortest(result) -> str:
    return ", ".join(f"{v.invariant} {len(v.trace)}" for v in result.violations) or "none"


def row(config: Config) -> dict:
    at_once = kernel_check(config, keep_going=True, symmetry=True)
    lagging = kernel_check(replace(config, metadata_lag=True), keep_going=True, symmetry=True)
    violations, violations_with_lag = shortest(at_once), shortest(lagging)
    return {
        "config": f"r={config.replicas} min.isr={config.min_isr} m={config.messages} c={config.crashes} "
                  f"e={config.elections} disks={config.disk_failures} {'flush' if config.flush else 'no-flush'} "
                  f"delays={config.delays} network-failures={config.partitions}",
        "states": at_once.stats.distinct_states,
        "states_with_lag": lagging.stats.distinct_states,
        "violations": violations,
        "violations_with_lag": violations_with_lag,
        "same": violations == violations_with_lag,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", type=int, nargs="+", default=[2, 3], choices=(2, 3), metavar="N",
                        help="the replica counts of the grid: 2, 3 or both (default both)")
    parser.add_argument("--out", type=Path, help="also write the rows as JSON")
    args = parser.parse_args(argv)
    rows = []
    for config in grid(tuple(args.replicas)):
        rows.append(row(config))
        if args.out:  # written as it goes: the 3-replica part takes a while
            args.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    print(tabulate([list(r.values()) for r in rows], headers=list(rows[0]), tablefmt="github"))
    differing = sum(not r["same"] for r in rows)
    print(f"\n{len(rows)} configurations, {differing} with other verdicts or shortest lengths under the lag")


if __name__ == "__main__":
    main()
