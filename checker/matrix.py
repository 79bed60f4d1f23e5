"""The failure catalogue: which data properties each producer and broker configuration can
violate, with the shortest counterexample behind every cell.

A matrix is the product of its axes (protocol x acks x min.insync.replicas x unclean
election x flush), every cell explored under the same bounds until each property is decided
(violated, or holding in every reachable state), with symmetry reduction (same verdicts and
shortest lengths, concrete traces), by the compiled kernel (or, `kernel=False`, the explicit
model), a cell at a time or a process per cell, or (`run_matrix_on_spark`) a Spark job per cell.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import signal
from dataclasses import dataclass
from functools import partial
from itertools import product
from typing import Callable, Iterator

from kafka_mc.model import PROTOCOLS, Config
from kafka_mc.model.config import ACKS
from kafka_mc.properties import INVARIANTS, WITNESSES

from .bfs import Budget, check
from .result import CheckResult

DATA_PROPERTIES = ("NoAckedDataLoss", "NoCommittedDataLoss", "NoConsumedRecordLost", "NoLogDivergence")
_CHECKED = tuple(p for p in INVARIANTS if p.name in DATA_PROPERTIES) + WITNESSES


@dataclass(frozen=True)
class Axes:
    """The settings a matrix varies; every combination is a cell."""

    protocols: tuple[str, ...] = tuple(PROTOCOLS)
    acks: tuple[str, ...] = ACKS
    min_isr: tuple[int, ...] = (1, 2)
    unclean: tuple[bool, ...] = (False, True)
    flush: tuple[bool, ...] = (True, False)

    def configs(self, bounds: Config) -> Iterator[Config]:
        """One configuration per cell: `bounds` with the cell's settings."""
        for protocol, acks, min_isr, unclean, flush in product(
                self.protocols, self.acks, self.min_isr, self.unclean, self.flush):
            yield dataclasses.replace(bounds, protocol=protocol, acks=acks, min_isr=min_isr, unclean=unclean,
                                      flush=flush)


DEFAULT_BOUNDS = Config(replicas=2, messages=2, crashes=2, elections=1, partitions=1)


@dataclass(frozen=True)
class Cell:
    config: Config
    result: CheckResult

    @property
    def name(self) -> str:
        return cell_name(self.config)

    @property
    def decided(self) -> bool:
        """The verdicts are final: the space was explored, or every property was decided."""
        return self.result.complete or len(self.result.violations) == len(DATA_PROPERTIES)

    def shortest(self, invariant: str) -> int | None:
        """The length of the invariant's shortest counterexample, None when it holds."""
        return next((len(v.trace) for v in self.result.violations if v.invariant == invariant), None)


def cell_name(config: Config) -> str:
    """The name of the cell of `config`, e.g. `hw-acks-all-min-isr-1-clean-flush`."""
    c = config
    return (f"{c.protocol}-acks-{c.acks}-min-isr-{c.min_isr}-{'unclean' if c.unclean else 'clean'}"
            f"-{'flush' if c.flush else 'no-flush'}")


def check_cell(config: Config, budget: Budget = Budget(), kernel: bool = True) -> Cell:
    """One cell, every property decided, by the kernel (on one thread) or the explicit model."""
    if kernel:
        from .kernel import kernel_check

        return Cell(config, kernel_check(config, _CHECKED, keep_going=True, symmetry=True, budget=budget))
    return Cell(config, check(config, _CHECKED, keep_going=True, symmetry=True, budget=budget))


def run_matrix(axes: Axes, bounds: Config = DEFAULT_BOUNDS, *, workers: int = 1, budget: Budget = Budget(),
               progress: Callable[[Cell], None] | None = None, kernel: bool = True) -> list[Cell]:
    """Check every cell, `workers` cells at a time; cells come back in axis order. Worker
    processes are spawned, not forked (the kernel's OpenMP threads do not survive a fork), after
    the kernel is compiled here, so they only load it."""
    configs = list(axes.configs(bounds))
    run_cell = partial(check_cell, budget=budget, kernel=kernel)
    if workers == 1:
        return [_reported(run_cell(config), progress) for config in configs]
    if kernel:
        from .kernel.engine import compile_kernel

        compile_kernel()
    # leaving the block (at the end, on an error or on Ctrl-C) terminates the workers, which leave
    # Ctrl-C to this process
    with multiprocessing.get_context("spawn").Pool(workers, initializer=signal.signal,
                                                   initargs=(signal.SIGINT, signal.SIG_IGN)) as pool:
        return [_reported(cell, progress) for cell in pool.imap(run_cell, configs)]


def run_matrix_on_spark(axes: Axes, bounds: Config = DEFAULT_BOUNDS, *, master: str = "local[*]",
                        budget: Budget = Budget(), progress: Callable[[Cell], None] | None = None,
                        spark=None, kernel: bool = True) -> list[Cell]:
    """Check every cell as a Spark job of one task (`check_cell` on an executor); the jobs are
    submitted together, so the cluster runs as many cells at once as it has cores. Cells come
    back in axis order; `progress` sees them as they finish."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from .shipping import ship
    from .spark import session

    configs = list(axes.configs(bounds))
    own_session = spark is None
    if own_session:
        spark = session(master, app_name="kafka-mc matrix")
    context = spark.sparkContext
    ship(context)
    run_cell = partial(check_cell, budget=budget, kernel=kernel)

    def job(config: Config) -> Cell:
        context.setJobDescription(f"kafka-mc matrix cell {cell_name(config)}")
        return context.parallelize([config], 1).map(run_cell).collect()[0]

    try:
        with ThreadPoolExecutor(max_workers=max(1, min(len(configs), 2 * context.defaultParallelism))) as pool:
            futures = {pool.submit(job, config): index for index, config in enumerate(configs)}
            cells: dict[int, Cell] = {}  # axis position -> cell
            for future in as_completed(futures):
                cells[futures[future]] = _reported(future.result(), progress)
        return [cells[index] for index in range(len(configs))]
    finally:
        if own_session:
            spark.stop()


def _reported(cell: Cell, progress: Callable[[Cell], None] | None) -> Cell:
    if progress:
        progress(cell)
    return cell
