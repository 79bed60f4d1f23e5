"""The HTML reports in a real headless browser (Debian's chromium, installed by `.ci/run`): the page
loads without script errors, every replica's log, HW and LEO is shown at every step of the trace,
the records a step removes are shown struck out, the step that causes the violation is marked, and
the keys and the timeline move the current step.

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
from kafka_mc.counterexamples.explain import diagnose
from kafka_mc.counterexamples.reports import write_reports
from kafka_mc.counterexamples.steps import trace_steps
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
  const name = box => box.firstChild.textContent.trim() + '/' + box.querySelector('.epoch').innerText.trim();
  const marker = (row, kind) => [...row.querySelectorAll('td.slot')]
    .findIndex(slot => [...slot.querySelectorAll('span.' + kind)].some(shown));
  return [...document.querySelectorAll('section.step')].map(section => ({
    id: section.id,
    shown: shown(section),
    replicas: [...section.querySelectorAll('table.logs tbody tr')].map(row => ({
      name: row.querySelector('th.name').firstChild.textContent.trim(),
      shown: shown(row),
      records: [...row.querySelectorAll('div.record:not(.free):not(.removed)')].filter(shown).map(name),
      removed: [...row.querySelectorAll('div.record.removed')].filter(shown)
        .filter(box => getComputedStyle(box).textDecorationLine.includes('line-through')).map(name),
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

    def open(self, page: Path, fragment: str = "") -> tuple[str, str]:
        """Open the page in a new tab and wait until it has loaded; its target and session ids."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=session)
        self.events.clear()
        self.call("Page.navigate", {"url": page.resolve().as_uri() + fragment}, session=session)
        deadline = time.monotonic() + TIMEOUT
        while not any(event.get("method") == "Page.loadEventFired" for event in self.events):
            self.events.append(self._read(deadline))
        return target, session

    def evaluate(self, session: str, expression: str) -> object:
        """The value of a script run in the page (a promise is awaited)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, session=session)
        return result["result"].get("value")

    def press(self, session: str, key: str, code: str, key_code: int) -> None:
        """A key pressed and released on the page."""
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", {"type": kind, "key": key, "code": code,
                                                 "windowsVirtualKeyCode": key_code}, session=session)

    def load(self, page: Path) -> tuple[list[str], object]:
        """Open the page; return the errors seen while it loaded and what RENDERED reads from it."""
        target, session = self.open(page)
        rendered = self.evaluate(session, RENDERED)
        self.close_tab(target)
        return errors_in(self.events), rendered

    def close_tab(self, target: str) -> None:
        self.call("Target.closeTarget", {"targetId": target})

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
    epochs), the records the step removed from it (struck out), the offset its HW marker and its LEO
    marker stand at."""
    states = trace.states()
    return [
        {"id": f"step-{number}", "shown": True,
         "replicas": [{"name": replica_name(index), "shown": True,
                       "records": [f"{record_name(r)}/e{r.epoch}" for r in replica.log],
                       "removed": removed_from(states[number - 1].replicas[index].log, replica.log) if number else [],
                       "hw": replica.hw, "leo": replica.leo}
                      for index, replica in enumerate(state.replicas)]}
        for number, state in enumerate(states)
    ]


def removed_from(before: tuple, after: tuple) -> list[str]:
    """The records of `before` from the first offset where `after` no longer holds the same record."""
    kept = next((offset for offset, record in enumerate(before) if offset >= len(after) or after[offset] != record),
                len(before))
    return [f"{record_name(r)}/e{r.epoch}" for r in before[kept:]]


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
        "case-l-hw": (load_scenario(SCENARIOS / "case-l-hw.toml").trace, "NoCommittedDataLoss"),
        "fast-failover": (load_scenario(SCENARIOS / "findings" / "fast-failover-leader-epoch.toml").trace,
                          "NoLogDivergence"),
        "long-random": (long_random_trace(), None),
    }
    for stem, (trace, invariant) in traces.items():
        write_reports(trace, invariant, out, stem, f"{stem} in a browser")
    return {stem: (out / f"{stem}.html", trace) for stem, (trace, _) in traces.items()}


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


MARKS = """(() => {
  const ids = selector => [...document.querySelectorAll(selector)].map(el => el.id || el.getAttribute('href'));
  const border = selector => getComputedStyle(document.querySelector(selector)).borderTopColor;
  return {
    cause: ids('section.step.cause'), shows: ids('section.step.shows'),
    timeline_cause: ids('nav.timeline a.cause'), timeline_shows: ids('nav.timeline a.shows'),
    badge_shown: [...document.querySelectorAll('section.step.cause span.badge.cause')]
      .map(badge => badge.getBoundingClientRect().width > 0),
    distinct: border('section.step.cause') !== border('section.step.shows'),
  };
})()"""

CURRENT = """(() => {
  const current = [...document.querySelectorAll('section.step.current')];
  const box = current.length ? current[0].getBoundingClientRect() : null;
  const below = document.querySelector('nav.timeline').getBoundingClientRect().bottom;
  return {
    steps: current.map(section => section.id),
    ticks: [...document.querySelectorAll('nav.timeline a.current')].map(tick => tick.getAttribute('href')),
    in_view: box !== null && box.top >= below && box.top < innerHeight,  // not hidden under the timeline
    highlighted: current.length > 0 && getComputedStyle(current[0]).boxShadow !== 'none',
  };
})()"""

KEYS = {"Right": ("ArrowRight", "ArrowRight", 39), "Left": ("ArrowLeft", "ArrowLeft", 37), "j": ("j", "KeyJ", 74),
        "k": ("k", "KeyK", 75)}


def shrinking_steps(trace, index: int) -> list[int]:
    """The steps at which the replica's log loses records (the model's states, not the report's)."""
    states = trace.states()
    return [number for number in range(1, len(states))
            if removed_from(states[number - 1].replicas[index].log, states[number].replicas[index].log)]


def holds(state, index: int, offset: int, msg: int) -> bool:
    log = state.replicas[index].log
    return offset < len(log) and log[offset].msg == msg


def last_removal_of_a_lost_committed_record(trace) -> int:
    """Case L from the model's states: the first state where a committed record is missing from the
    leader's log, and the last step before it at which that leader lost the record."""
    states = trace.states()
    shows, leader, (offset, msg) = next(
        (number, state.controller.leader, entry) for number, state in enumerate(states)
        for entry in state.committed if not holds(state, state.controller.leader, *entry))
    return max(number for number in range(1, shows + 1)
               if holds(states[number - 1], leader, offset, msg) and not holds(states[number], leader, offset, msg))


def test_case_l_strikes_out_the_record_its_truncation_removes(browser, reports):
    """A truncates to its HW after restarting (figure 8-10): m2 is drawn struck out at that step."""
    page, trace = reports["case-l-hw"]
    errors, rendered = browser.load(page)
    truncating = shrinking_steps(trace, 0)
    assert errors == [] and truncating
    first = truncating[0]
    assert str(trace.actions[first - 1]) == "BecomeFollower(A)"
    assert rendered[first]["replicas"][0]["removed"] == ["m2/e0"]
    assert "m2/e0" not in rendered[first]["replicas"][0]["records"]
    assert all(step["replicas"][0]["removed"] == [] for number, step in enumerate(rendered) if number not in truncating)


def test_the_cause_is_marked_on_the_step_that_removed_the_lost_record(browser, reports):
    page, trace = reports["case-l-hw"]
    diagnosis = diagnose(trace_steps(trace), "NoCommittedDataLoss")
    assert diagnosis is not None and diagnosis.cause is not None
    cause = last_removal_of_a_lost_committed_record(trace)
    assert diagnosis.cause.number == cause < diagnosis.shows
    target, session = browser.open(page)
    marks = browser.evaluate(session, MARKS)
    browser.close_tab(target)
    assert errors_in(browser.events) == []
    assert marks == {"cause": [f"step-{cause}"], "shows": [f"step-{diagnosis.shows}"],
                     "timeline_cause": [f"#step-{cause}"], "timeline_shows": [f"#step-{diagnosis.shows}"],
                     "badge_shown": [True], "distinct": True}


def test_keys_and_the_timeline_move_the_highlighted_step(browser, reports):
    page, trace = reports["case-l-hw"]
    target, session = browser.open(page)
    start = browser.evaluate(session, CURRENT)
    keys = ("Left", "Right", "j", "j", "k")  # Left at the first step stays there
    moved = []
    for key in keys:
        browser.press(session, *KEYS[key])
        moved.append(browser.evaluate(session, CURRENT))
    for _ in range(len(trace) + 3):
        browser.press(session, *KEYS["Right"])
    at_end = browser.evaluate(session, CURRENT)
    browser.evaluate(session, "document.querySelector('nav.timeline a[href=\"#step-5\"]').click();"
                              "new Promise(done => setTimeout(done, 100))")
    clicked = browser.evaluate(session, CURRENT)
    browser.close_tab(target)
    assert errors_in(browser.events) == []
    assert start["steps"] == ["step-0"] and start["ticks"] == ["#step-0"] and start["highlighted"]
    assert [(current["steps"], current["ticks"]) for current in moved] == [
        ([f"step-{number}"], [f"#step-{number}"]) for number in (0, 1, 2, 3, 2)]
    assert all(current["in_view"] and current["highlighted"] for current in moved[1:])
    last = f"step-{len(trace)}"
    assert at_end == {"steps": [last], "ticks": [f"#{last}"], "in_view": True, "highlighted": True}
    assert clicked["steps"] == ["step-5"] and clicked["ticks"] == ["#step-5"] and clicked["in_view"]


def test_an_address_picks_the_current_step(browser, reports):
    page, _ = reports["case-l-hw"]
    target, session = browser.open(page, "#step-13")
    current = browser.evaluate(session, CURRENT)
    browser.close_tab(target)
    assert errors_in(browser.events) == []
    assert current["steps"] == ["step-13"] and current["in_view"]
