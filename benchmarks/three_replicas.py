"""Beyond the documents: both protocols with three replicas, every invariant's verdict.

    python benchmarks/three_replicas.py            # a Markdown table on stdout (several minutes)
    python benchmarks/three_replicas.py --out DIR  # also the reports of every violation
    python benchmarks/three_replicas.py --workers 2  # two configurations at a time
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from tabulate import tabulate

from kafka_mc.checker import check
from kafka_mc.counterexamples.summary import config_text, invariant_verdicts
from kafka_mc.model import PROTOCOLS, Config
from kafka_mc.properties import INVARIANTS

CONFIGS = [
    Config(protocol, replicas=3, messages=messages, crashes=crashes, elections=elections, min_isr=min_isr,
           unclean=unclean)
    for protocol in PROTOCOLS
    for messages, crashes, elections, min_isr, unclean in (
        (1, 1, 1, 1, False),
        (2, 2, 1, 1, False),
        (2, 2, 1, 2, False),
        (2, 2, 1, 1, True),
        (2, 2, 2, 1, False),
    )
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="write the reports of every violation here")
    parser.add_argument("--workers", type=int, default=1, choices=range(1, 9), metavar="N",
                        help="configurations checked at once, one process each (1 to 8)")
    args = parser.parse_args()
    rows = []
    with ProcessPoolExecutor(args.workers) as pool:
        for config, result in zip(CONFIGS, pool.map(_check, CONFIGS)):
            verdicts = invariant_verdicts(result)
            rows.append((config_text(config), result.stats.distinct_states, f"{result.stats.seconds:.0f}",
                         *(verdicts[p.name] for p in INVARIANTS)))
            print(f"done: {config_text(config)}", file=sys.stderr)
            if args.out:
                _write_reports(config, result, args.out)
    headers = ("config", "distinct states", "seconds", *(p.name for p in INVARIANTS))
    print(tabulate(rows, headers=headers, tablefmt="github"))


def _check(config: Config):
    return check(config, keep_going=True)


def _write_reports(config: Config, result, out: Path) -> None:
    from kafka_mc.counterexamples.reports import write_reports

    for violation in result.violations:
        stem = f"r3-{config.protocol}-m{config.messages}-c{config.crashes}-e{config.elections}" \
               f"-isr{config.min_isr}{'-unclean' if config.unclean else ''}-{violation.invariant}"
        write_reports(violation.trace, violation.invariant, out, stem,
                      f"{violation.invariant} with three replicas ({config_text(config)})")


if __name__ == "__main__":
    main()
