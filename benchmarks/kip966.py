"""KIP-966 at the configuration of Vanlightly's kafka-tlaplus model, and the two releases before it.

His `kafka_replication_kip_966.cfg` (3 brokers, replication factor 3, min.insync.replicas 2, one
lossy unclean shutdown, one fencing) took TLC 35 hours, 350 GB of disk and 28 threads. Here: 3
replicas, min.insync.replicas 2, unflushed writes (a crash is a lossy unclean shutdown), 1 crash,
1 network failure (a broker fenced while it runs), 2 messages and 3 elections, every reachable
state explored by the compiled kernel (one thread, symmetry), each protocol in a fresh process:

    python benchmarks/kip966.py                 # a Markdown table on stdout (about 6 minutes)
    python benchmarks/kip966.py --out FILE.json # also the rows as JSON
    python benchmarks/kip966.py --messages 3    # a larger bound
    python benchmarks/kip966.py --delays 1 --protocols kip-966   # one AlterPartition or fetch in flight late
    python benchmarks/kip966.py --metadata-lag --protocols kip-966   # the leader reads the metadata late

The models differ (his has AlterPartition, broker registration and heartbeats, a metadata log,
and one value with unbounded writes; this one writes the ISR through at once unless `--delays` lets
requests arrive late, has the leader read the controller's ISR changes at once unless `--metadata-lag`
(KRaft variants only) has it read them late, and bounds the writes), so the figures are beside his, not
a like-for-like speed comparison.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from tabulate import tabulate

PROTOCOLS = ("kafka-14704", "kafka-15583", "kip-966")
COLUMNS = ("protocol", "config", "distinct", "generated", "depth", "explore_s", "distinct_per_s", "peak_rss_mb",
           "violations")


def run(protocol: str, messages: int, elections: int, delays: int, metadata_lag: bool) -> dict:
    """In the child: one complete exploration, as a JSON-ready row."""
    from kafka_mc.checker.kernel import kernel_check
    from kafka_mc.model import Config

    config = Config(protocol, replicas=3, messages=messages, crashes=1, elections=elections, min_isr=2,
                    flush=False, partitions=1, delays=delays, metadata_lag=metadata_lag)
    result = kernel_check(config, keep_going=True, symmetry=True)
    stats = result.stats
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "protocol": protocol,
        "config": f"r=3 m={messages} c=1 e={elections} min.isr=2 no-flush network-failures=1"
                  + (f" delays={delays}" if delays else "") + (" metadata-lag" if metadata_lag else ""),
        "distinct": stats.distinct_states,
        "generated": stats.states_generated,
        "depth": stats.depth,
        "explore_s": round(stats.seconds, 1),
        "distinct_per_s": round(stats.distinct_states / stats.seconds),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "violations": ", ".join(f"{v.invariant} {len(v.trace)}" for v in result.violations) or "none",
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=2, choices=range(1, 5), metavar="N", help="1 to 4")
    parser.add_argument("--elections", type=int, default=3, choices=range(1, 5), metavar="N", help="1 to 4")
    parser.add_argument("--delays", type=int, default=0, choices=range(0, 3), metavar="N",
                        help="0 to 2 AlterPartition requests or fetches handled late (default 0)")
    parser.add_argument("--metadata-lag", action="store_true",
                        help="the leader reads the controller's ISR changes late (KRaft variants: kip-966)")
    parser.add_argument("--protocols", nargs="+", default=PROTOCOLS, choices=PROTOCOLS, metavar="NAME",
                        help=f"any of {', '.join(PROTOCOLS)} (default all)")
    parser.add_argument("--out", type=Path, help="also write the rows as JSON")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(run(args.child, args.messages, args.elections, args.delays, args.metadata_lag)))
        return
    if args.metadata_lag and set(args.protocols) - {"kip-966"}:
        parser.error(f"--metadata-lag: only kip-966 is a KRaft variant; give --protocols kip-966, "
                     f"not {' '.join(args.protocols)}")
    rows = []
    for protocol in args.protocols:
        started = time.perf_counter()
        child = subprocess.run([sys.executable, __file__, "--child", protocol, "--messages", str(args.messages),
                                "--elections", str(args.elections), "--delays", str(args.delays),
                                *(["--metadata-lag"] if args.metadata_lag else [])],
                               capture_output=True, text=True)
        if child.returncode != 0:
            sys.exit(f"{protocol} failed:\n{child.stderr}")
        row = json.loads(child.stdout.splitlines()[-1])
        row["wall_s"] = round(time.perf_counter() - started, 1)
        rows.append(row)
        print(f"done: {protocol}", file=sys.stderr)
    print(tabulate([[row[c] for c in (*COLUMNS, "wall_s")] for row in rows], headers=(*COLUMNS, "wall_s"),
                   tablefmt="github"))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
