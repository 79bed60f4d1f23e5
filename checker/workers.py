"""Where the partitions of an exploration live: in this process, or one worker process each.

Worker processes exchange successors directly, each through its own inbox queue, and
answer the coordinating process over a pipe.
"""

from __future__ import annotations

import multiprocessing
import signal
import time

from kafka_mc.model import Config
from kafka_mc.properties import Property

from .partition import LevelReport, Partition, without_cyclic_gc


class LocalPartitions:
    """One partition, in this process."""

    def __init__(self, config: Config, properties: tuple[Property, ...], symmetry: bool):
        self.partition = Partition(config, properties, 0, 1, symmetry)

    def seed(self) -> list[LevelReport]:
        return [self.partition.seed()]

    def level(self, settled: set[str], stop_at: float | None = None) -> list[LevelReport]:
        self.partition.settle(settled)
        return [self.partition.level_alone(stop_at)]

    def link(self, partition: int, node: int) -> tuple[int, int, int]:
        return self.partition.link(node)

    def close(self) -> None:
        pass


def _serve(config, properties, index, count, symmetry, commands, inboxes) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the coordinating process's to act on
    with without_cyclic_gc():
        _serve_partition(config, properties, index, count, symmetry, commands, inboxes)


def _serve_partition(config, properties, index, count, symmetry, commands, inboxes) -> None:
    partition = Partition(config, properties, index, count, symmetry)

    def exchange(outboxes):
        for target, outbox in enumerate(outboxes):
            if target != index:
                inboxes[target].put(outbox)
        return sorted((inboxes[index].get() for _ in range(count - 1)), key=lambda outbox: outbox.sender)

    while True:
        command, argument = commands.recv()
        if command == "seed":
            commands.send(partition.seed())
        elif command == "level":
            settled, stop_at = argument
            partition.settle(settled)
            commands.send(partition.level(exchange, stop_at))
        elif command == "link":
            commands.send(partition.link(argument))
        else:
            return


class WorkerPartitions:
    """N partitions in N worker processes (forked, so they share the loaded model code)."""

    def __init__(self, config: Config, properties: tuple[Property, ...], symmetry: bool, count: int):
        context = multiprocessing.get_context("fork")
        inboxes = [context.Queue() for _ in range(count)]
        self.pipes, self.processes = [], []
        for index in range(count):
            ours, theirs = context.Pipe()
            process = context.Process(target=_serve, daemon=True,
                                      args=(config, properties, index, count, symmetry, theirs, inboxes))
            process.start()
            self.pipes.append(ours)
            self.processes.append(process)

    def _all(self, command: str, argument=None) -> list:
        for pipe in self.pipes:
            pipe.send((command, argument))
        return [self._receive(pipe) for pipe in self.pipes]

    @staticmethod
    def _receive(pipe):
        try:
            return pipe.recv()
        except EOFError:
            raise RuntimeError("a worker process died") from None

    def seed(self) -> list[LevelReport]:
        return self._all("seed")

    def level(self, settled: set[str], stop_at: float | None = None) -> list[LevelReport]:
        return self._all("level", (settled, stop_at))  # time.monotonic() is one clock for every process

    def link(self, partition: int, node: int) -> tuple[int, int, int]:
        self.pipes[partition].send(("link", node))
        return self._receive(self.pipes[partition])

    def close(self) -> None:
        """Stop the workers: at once when they are idle; those still busy (the run was interrupted
        or failed inside a level) are terminated after half a second."""
        for pipe in self.pipes:
            try:
                pipe.send(("stop", None))
            except OSError:
                pass
        deadline = time.monotonic() + 0.5
        for process in self.processes:
            process.join(timeout=max(deadline - time.monotonic(), 0))
        for process in self.processes:
            if process.is_alive():
                process.terminate()
                process.join()
