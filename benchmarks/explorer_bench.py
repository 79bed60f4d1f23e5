"""How long `kafka-mc explore` takes to answer a step: real HTTP requests to the explorer's app
served by uvicorn on a free loopback port, as the page makes them (`GET /api/state?path=...`).

    python benchmarks/explorer_bench.py            # 50 requests per path; prints a table and the machine

Paths: one step from `check`'s default configuration, the whole of Case L under hw (17 steps, the
shipped scenario `case-l-hw`), its fifth step, and one step of the controller model.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import time
import urllib.parse
import urllib.request

from bench import machine
from tabulate import tabulate

from kafka_mc.checker.scenario import load_scenario
from kafka_mc.control import ControllerConfig
from kafka_mc.explorer.app import Explorer, explorer_app
from kafka_mc.explorer.paths import trace_path
from kafka_mc.explorer.server import ExplorerServer
from kafka_mc.model import Config


def timed(url: str, requests: int) -> list[float]:
    """Seconds per request, after one untimed request (the model built once)."""
    urllib.request.urlopen(url).read()
    seconds = []
    for _ in range(requests):
        started = time.perf_counter()
        urllib.request.urlopen(url).read()
        seconds.append(time.perf_counter() - started)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=50)
    args = parser.parse_args()
    case_l = list(trace_path(load_scenario("case-l-hw").trace))
    cases = [
        ("defaults, step 1", "replication", Config().to_dict(), ["0", "ProducerWrite(A)"]),
        ("Case L, the whole path (17 steps)", "replication", load_scenario("case-l-hw").config.to_dict(), case_l),
        ("Case L, step 5", "replication", load_scenario("case-l-hw").config.to_dict(), case_l[:6]),
        ("controller model, step 1", "controller", ControllerConfig().to_dict(), ["0", "BrokerWinsElection(0)"]),
    ]
    rows = []
    for label, name, settings, path in cases:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        server = ExplorerServer(explorer_app(Explorer(name, settings)), sock)
        server.start()
        try:
            port = sock.getsockname()[1]
            url = f"http://127.0.0.1:{port}/api/state?" + urllib.parse.urlencode({"path": ",".join(path)})
            seconds = timed(url, args.requests)
        finally:
            server.stop()
        rows.append((label, f"{statistics.median(seconds) * 1000:.1f}", f"{max(seconds) * 1000:.1f}"))
    print(tabulate(rows, headers=("request", "median ms", "max ms")))
    print(f"machine: {machine()}; {args.requests} requests each")


if __name__ == "__main__":
    main()
