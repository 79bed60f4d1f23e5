"""The HTML reports in a real headless browser (Debian's chromium, installed by `.ci/run`): the page
loads without script errors, and every replica's log, HW and LEO is shown at every step of the trace.

The browser is driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`), so nothing
beyond the standard library is needed: console errors, uncaught exceptions and failed loads are
collected while the page loads, then a script reads what is rendered (sizes and computed styles,
not the markup) and the test compares it with the trace replayed by the model. The controls at the
end show that a script error and a hidden replica are caught.
"""

import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from kafka_mc.checker.scenario import load_scenario
from kafka_mc.checker.simulate import simulate
from kafka_mc.counterexamples.reports import write_reports
from kafka_mc.model import Config
from kafka_mc.model.state import record_name, replica_name
from kafka_mc.properties import SOMETIMES, Property

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SCENARIOS = Path(__file__).parent.parent / "scenarios"
TIMEOUT = 30.0

pytestmark = pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK),
                                reason="chromium is not installed (.ci/run installs Debian's chromium)")

RENDERED = """(() => {
  const shown = el => {
    const box = el.getBoundingClientRect(), style = getComputedStyle(el);
    return box.width > 0 && box.height > 0 && style.visibility !== 'hidden' && parseFloat(style.opacity) > 0;
  };
  const marker = (row, kind) => [...row.querySelectorAll('td.slot')]
    .findIndex(slot => [...slot.querySelectorAll('span.' + kind)].some(shown));
  return [...document.querySelectorAll('section.step')].map(section => ({
    id: section.id,
    shown: shown(section),
    replicas: [...section.querySelectorAll('table.logs tbody tr')].map(row => ({
      name: row.querySelector('th.name').firstChild.textContent.trim(),
      shown: shown(row),
      records: [...row.querySelectorAll('div.record:not(.free)')].filter(shown)
        .map(box => box.firstChild.textContent.trim() + '/' + box.querySelector('.epoch').innerText.trim()),
      hw: marker(row, 'hw'),
      leo: marker(row, 'leo'),
    })),
  }));
})()"""


class Browser:
    """Headless chromium over the DevTools protocol on fds 3 (commands) and 4 (replies and events)."""

    def __init__(self, profile: Path):
        commands_read, self._commands = os.pipe()
        self._replies, replies_write = os.pipe()

        def onto_3_and_4():
            commands, replies = os.dup(commands_read), os.dup(replies_write)
            os.dup2(commands, 3)
            os.dup2(replies, 4)

        self.process = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--remote-debugging-pipe",
             f"--user-data-dir={profile}", "about:blank"],
            pass_fds=(3, 4), preexec_fn=onto_3_and_4, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(commands_read)
        os.close(replies_write)
        self._buffer, self._next_id, self.events = b"", 0, []

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._replies], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._replies, 1 << 16)
            if not chunk:
                raise EOFError("chromium closed the DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def load(self, page: Path) -> tuple[list[str], object]:
        """Open the page; return the errors seen while it loaded and what RENDERED reads from it."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=session)
        self.events.clear()
        self.call("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
        deadline = time.monotonic() + TIMEOUT
        while not any(event.get("method") == "Page.loadEventFired" for event in self.events):
            self.events.append(self._read(deadline))
        rendered = self.call("Runtime.evaluate", {"expression": RENDERED, "returnByValue": True},
                             session=session)
        self.call("Target.closeTarget", {"targetId": target})
        return errors_in(self.events), rendered["result"].get("value")

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (OSError, EOFError, TimeoutError, RuntimeError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        os.close(self._commands)
        os.close(self._replies)


def errors_in(events: list[dict]) -> list[str]:
    """Uncaught exceptions, console errors and browser log errors (failed loads and the like)."""
    errors = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            errors.append(details.get("exception", {}).get("description") or details.get("text"))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            errors.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            errors.append(f"log: {params['entry']['text']}")
    return errors


def expected_view(trace) -> list[dict]:
    """What each step must show, from the trace replayed by the model: every replica's records (with
    epochs), the offset its HW marker and its LEO marker stand at."""
    return [
        {"id": f"step-{number}", "shown": True,
         "replicas": [{"name": replica_name(index), "shown": True,
                       "records": [f"{record_name(r)}/e{r.epoch}" for r in replica.log],
                       "hw": replica.hw, "leo": replica.leo}
                      for index, replica in enumerate(state.replicas)]}
        for number, (_, state) in enumerate(trace.steps())
    ]


def long_random_trace():
    """A simulation's trace to a state with ten records written, on five replicas: beyond `check`."""
    config = Config.for_simulation(protocol="kip-279", replicas=5, messages=12, crashes=6, elections=6)
    goal = Property("TenWrites", SOMETIMES, "test", lambda state: state.written >= 10)
    return simulate(config, [goal], runs=50, depth=200, seed=4).witness_traces["TenWrites"]


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    opened = Browser(tmp_path_factory.mktemp("chromium-profile"))
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """The HTML report of a documented case (two replicas), of a finding (three) and of a long random
    trace (five), as `write_reports` writes them."""
    out = tmp_path_factory.mktemp("html")
    traces = {
        "case-l-hw": load_scenario(SCENARIOS / "case-l-hw.toml").trace,
        "fast-failover": load_scenario(SCENARIOS / "findings" / "fast-failover-leader-epoch.toml").trace,
        "long-random": long_random_trace(),
    }
    for stem, trace in traces.items():
        write_reports(trace, "NoLogDivergence", out, stem, f"{stem} in a browser")
    return {stem: (out / f"{stem}.html", trace) for stem, trace in traces.items()}


@pytest.mark.parametrize("stem", ["case-l-hw", "fast-failover", "long-random"])
def test_the_report_loads_without_errors_and_shows_every_log_at_every_step(browser, reports, stem):
    page, trace = reports[stem]
    errors, rendered = browser.load(page)
    assert errors == []
    assert len(rendered) == len(trace) + 1
    assert rendered == expected_view(trace)


def test_the_check_catches_a_script_error_and_a_console_error(browser, reports, tmp_path):
    page, _ = reports["case-l-hw"]
    broken = tmp_path / "broken.html"
    broken.write_text(page.read_text().replace(
        "</head>", "<script>console.error('drawn wrong'); undefinedFunction();</script></head>"))
    errors, _ = browser.load(broken)
    assert any("undefinedFunction is not defined" in error for error in errors), errors
    assert "console: drawn wrong" in errors


def test_the_check_catches_a_replica_the_page_does_not_show(browser, reports, tmp_path):
    page, trace = reports["case-l-hw"]
    hidden = tmp_path / "hidden.html"
    hidden.write_text(page.read_text().replace(
        "</style>", "table.logs tbody tr:nth-child(2) { visibility: hidden; }\n</style>"))
    errors, rendered = browser.load(hidden)
    assert errors == [] and rendered != expected_view(trace)
    assert all(not step["replicas"][1]["shown"] for step in rendered)
