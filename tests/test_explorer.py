"""`kafka-mc explore`: the JSON API through Starlette's TestClient (state, step, back, branch,
loading a counterexample, bad input, another model, a user's property, response time), the command
itself, and the page in a real headless browser (Debian's chromium, driven by Playwright; skipped
where it is not installed, as `.ci/run` installs it)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
import warnings
from pathlib import Path

import pytest
from starlette.exceptions import StarletteDeprecationWarning

from kafka_mc import exitcodes
from kafka_mc.checker import check
from kafka_mc.checker.scenario import load_scenario, replay
from kafka_mc.cli import main
from kafka_mc.cli_common import load_properties
from kafka_mc.counterexamples.reports import write_reports
from kafka_mc.explorer.app import Explorer, explorer_app
from kafka_mc.explorer.models import model_settings
from kafka_mc.explorer.paths import trace_path
from kafka_mc.explorer.server import ExplorerServer, listening_socket
from kafka_mc.model import Config

with warnings.catch_warnings():  # Starlette's TestClient prefers httpx2 to httpx, which is not packaged here
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient

CASE_L = load_scenario(Path("case-l-hw"))
CASE_L_PATH = list(trace_path(CASE_L.trace))
CASE_L_BREAKS = replay(CASE_L).first_breaks  # invariant -> the step it first fails at
DEFAULT = ("replication", Config().to_dict())


def client(name: str = DEFAULT[0], settings: dict | None = None, **options) -> TestClient:
    return TestClient(explorer_app(Explorer(name, DEFAULT[1] if settings is None else settings, **options)))


def state(api: TestClient, path: list[str] | None = None, **params):
    query = {**params, **({"path": ",".join(path)} if path is not None else {})}
    return api.get("/api/state", params=query)


def enabled(view: dict) -> dict[str, list[dict]]:
    return {entry["action"]: entry["changes"] for entry in view["enabled"]}


def verdict(view: dict, name: str) -> dict:
    return next(prop for prop in view["properties"] if prop["name"] == name)


# ---------------------------------------------------------------- the API


def test_opens_on_the_initial_state_with_the_enabled_actions_and_what_each_changes():
    view = state(client()).json()
    assert view["path"] == ["0"] and view["at"] == 0 and view["default"]
    assert view["initial_states"] == 2 and view["steps"] == [{"number": 0, "action": "Init", "failing": []}]
    assert 'class="logs"' in view["picture"]  # the replication model's picture, as the HTML reports draw it
    changes = enabled(view)
    assert list(changes)[:2] == ["ProducerWrite(A)", "LeaderHandleFetchRequest(B)"]
    assert {"variable": "replicas.A.leo", "before": 0, "after": 1} in changes["ProducerWrite(A)"]
    assert all(prop["holds"] for prop in view["properties"] if prop["kind"] == "invariant")


def test_step_back_forward_and_branch_are_paths():
    api = client()
    stepped = state(api, ["0", "ProducerWrite(A)"]).json()
    assert stepped["at"] == 1 and stepped["steps"][1]["action"] == "ProducerWrite(A)"
    assert next(v for v in stepped["variables"] if v["name"] == "written") == \
        {"name": "written", "value": "1", "changed": True}
    back = state(api, ["0", "ProducerWrite(A)"], step="0").json()
    assert back["at"] == 0 and back["path"] == ["0", "ProducerWrite(A)"]  # the step ahead is kept: forward
    assert back["variables"] == state(api, ["0"]).json()["variables"]
    branched = state(api, ["0", "ReplicaCrash(A)"]).json()
    assert branched["path"] == ["0", "ReplicaCrash(A)"] and "ControllerNoticeFailure(A)" in enabled(branched)


def test_case_l_path_fails_no_committed_data_loss_from_the_step_replay_names():
    view = state(client(), CASE_L_PATH).json()
    failing = verdict(view, "NoCommittedDataLoss")
    assert failing["holds"] is False and failing["failing_since"] == CASE_L_BREAKS["NoCommittedDataLoss"]
    assert [s["number"] for s in view["steps"] if "NoCommittedDataLoss" in s["failing"]] == \
        list(range(CASE_L_BREAKS["NoCommittedDataLoss"], len(CASE_L_PATH)))
    assert verdict(view, "RecordCommitted")["reached_at"] is not None  # a witness: where it first held
    before = state(client(), CASE_L_PATH, step=str(CASE_L_BREAKS["NoCommittedDataLoss"] - 1)).json()
    assert verdict(before, "NoCommittedDataLoss")["holds"] is True


def test_loads_a_shipped_scenario_an_itf_file_and_an_upload(tmp_path):
    api = client()
    loaded = api.post("/api/load", json={"source": "case-l-hw"}).json()
    assert loaded["path"] == CASE_L_PATH and loaded["default"] and loaded["title"] == CASE_L.title
    written = write_reports(CASE_L.trace, "NoCommittedDataLoss", tmp_path, "case-l", "Case L")
    itf = next(path for path in written if path.name.endswith(".itf.json"))
    from_file = api.post("/api/load", json={"source": str(itf)}).json()
    assert from_file["path"] == CASE_L_PATH and "NoCommittedDataLoss" in from_file["title"]
    uploaded = api.post("/api/load", json={"name": "mine.itf.json", "text": itf.read_text()}).json()
    assert uploaded["path"] == CASE_L_PATH
    bad = api.post("/api/load", json={"name": "mine.itf.json", "text": "{}"})
    assert bad.status_code == 400 and bad.json()["error"].startswith("mine.itf.json: not an ITF trace of kafka-mc's TLA+ twin")
    missing = api.post("/api/load", json={"source": "no-such-case"})
    assert missing.status_code == 400 and "no-such-case" in missing.json()["error"]


def test_a_trace_given_at_start_is_the_default_path():
    api = client(*model_settings(CASE_L.trace.model), start=tuple(CASE_L_PATH), title=CASE_L.title)
    view = state(api).json()
    assert view["path"] == CASE_L_PATH and view["title"] == CASE_L.title


@pytest.mark.parametrize("path, named", [
    (["0", "Bogus(A)"], "'Bogus(A)' is not an action of the replication model"),
    (["0", "ProducerWrite(Z)"], "'ProducerWrite(Z)' is not an action"),
    (["0", "ProducerWrite(A)", "ReplicaRestart(A)"], "step 2: ReplicaRestart(A) is not enabled after step 1"),
])
def test_a_bad_action_is_a_400_naming_it_and_the_actions_enabled_there(path, named):
    api = client()
    answer = state(api, path)
    assert answer.status_code == 400
    body = answer.json()
    assert named in body["error"] and "enabled there: ProducerWrite(A)" in body["error"]
    assert body["valid"] == path[:-1] and "ReplicaCrash(A)" in body["enabled"]
    assert state(api, ["0"]).status_code == 200  # and the app goes on


@pytest.mark.parametrize("params, named", [
    ({"path": "7"}, "initial state, from 0 to 1, not '7'"),
    ({"path": "0", "step": "3"}, "step must be a step of the path, from 0 to 0, not '3'"),
    ({"model": "nope"}, "model 'nope' is unknown; allowed: replication, controller"),
    ({"model": "controller", "config": "[1]"}, "config must be a JSON object"),
    ({"model": "controller", "config": '{"replicas": 3}'}, "replicas is not a setting of the controller model"),
    ({"config": '{"replicas": 9}'}, "config of the replication model: replicas must be"),
])
def test_a_bad_step_model_or_config_is_a_400_naming_it(params, named):
    answer = client().get("/api/state", params=params)
    assert answer.status_code == 400 and named in answer.json()["error"]


def test_a_control_plane_model_through_the_same_interface():
    api = client("controller", {})
    scenario = load_scenario(Path("controller-deposed"))
    path = ["0", *map(str, scenario.trace.actions)]  # actions with commas of their own
    view = state(api, path).json()
    assert view["model"] == "controller" and view["picture"] is None and view["at"] == len(path) - 1
    assert {v["name"] for v in view["variables"]} >= {"controllerEpoch", "obeyedControllerEpoch"}
    assert verdict(view, "OneControllerPerEpoch")["holds"] is True
    other = state(client(), ["0"], model="controller", config="{}").json()  # named in the URL, from any server
    assert other["model"] == "controller" and not other["default"] and "BrokerWinsElection(0)" in enabled(other)


def test_a_users_property_is_evaluated_at_every_step(tmp_path):
    (tmp_path / "props.py").write_text("def a_log_empty(state):\n    return not state.replicas[0].log\n\n"
                                       "def broken(state):\n    return state.missing\n")
    extra = load_properties([f"{tmp_path}/props.py:a_log_empty", f"{tmp_path}/props.py:broken"])
    view = state(client(extra=extra), ["0", "ProducerWrite(A)", "LeaderHandleFetchRequest(B)"]).json()
    assert verdict(view, "a_log_empty") | {"source": None} == {
        "name": "a_log_empty", "kind": "invariant", "on_step": False, "source": None, "holds": False, "error": None,
        "failing_since": 1}
    assert "property broken raised AttributeError" in verdict(view, "broken")["error"]


# ---------------------------------------------------------------- the command


@pytest.mark.parametrize("argv, message", [
    (["--port", "70000"], "--port must be an integer from 0 to 65,535, not 70000"),
    (["--model", "nope"], "--model 'nope' is unknown; allowed: replication, controller"),
    (["--model", "controller", "--replicas", "3"], "--replicas: not with --model controller"),
    (["--trace", "case-l-hw", "--protocol", "kip-279"], "--protocol: not with --trace"),
    (["--trace", "no-such-case"], "no-such-case: no such file, and no shipped scenario"),
])
def test_bad_options_are_refused_by_name(argv, message, capsys):
    code = main(["explore", *argv])
    assert code in (exitcodes.BAD_INPUT, exitcodes.BAD_SPEC) and message in capsys.readouterr().err


def test_a_port_in_use_is_refused_by_name(capsys):
    with listening_socket("127.0.0.1", 0) as taken:
        port = taken.getsockname()[1]
        assert main(["explore", "--port", str(port)]) == exitcodes.BAD_INPUT
    assert f"--port {port}: cannot listen there" in capsys.readouterr().err


def test_the_command_prints_the_url_serves_and_stops_on_ctrl_c():
    command = [sys.executable, "-m", "kafka_mc", "explore", "--trace", "case-l-hw", "--host", "localhost"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(f"{url}api/state?step=0", timeout=10) as answer:
            assert json.load(answer)["path"] == CASE_L_PATH
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=20)
    assert server.returncode == exitcodes.OK and "warning" not in err


def test_check_explore_serves_the_shortest_counterexample_and_exits_with_the_verdict():
    """`kafka-mc check --explore`: the run's output, then the explorer on its shortest
    counterexample; after Ctrl-C, the run's own exit code (12: a violation)."""
    command = [sys.executable, "-m", "kafka_mc", "check", "--protocol", "hw", "--engine", "python", "--quiet",
               "--explore"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        while not (lines and lines[-1].startswith("http://")):
            lines.append(server.stdout.readline().strip())
        url = lines[-1]
        assert "Error: Invariant NoCommittedDataLoss is violated." in lines
        with urllib.request.urlopen(f"{url}api/state", timeout=10) as answer:
            view = json.load(answer)
        shortest = check(Config(protocol="hw")).violations[0]
        assert view["path"] == list(trace_path(shortest.trace))
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=20)
    assert server.returncode == exitcodes.VIOLATION


def test_check_explore_is_refused_with_json_output(capsys):
    assert main(["check", "--explore", "--format", "json", "--quiet"]) == exitcodes.BAD_INPUT
    assert "--explore: not with --format json" in capsys.readouterr().err


# ---------------------------------------------------------------- the page in a browser

CHROMIUM = "/usr/bin/chromium"
BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run"]
browser_test = pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK),
                                  reason="chromium is not installed (.ci/run installs Debian's chromium)")


@pytest.fixture(scope="module")
def server_url():
    server = ExplorerServer(explorer_app(Explorer(*DEFAULT)), listening_socket("127.0.0.1", 0))
    url = server.start()
    yield url
    server.stop()


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser, server_url):
    """A fresh page on the explorer; fails the test on a script error."""
    opened = browser.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.set_default_timeout(10_000)
    yield opened
    opened.close()
    assert not errors, f"script errors: {errors}"


def expect(target):
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(target)


def action(page, text: str):
    return page.locator(f'#actions button.action[data-action="{text}"]')


def path_of(page) -> list[str]:
    return page.evaluate("new URLSearchParams(location.search).get('path')").split(",")


@browser_test
def test_page_steps_back_forward_and_branches(page, server_url):
    page.goto(server_url)
    expect(page.locator("#state-heading")).to_have_text("State after step 0: Init")
    expect(page.locator("#picture table.logs")).to_be_visible()
    action(page, "ProducerWrite(A)").click()
    expect(page.locator("#state-heading")).to_have_text("State after step 1: ProducerWrite(A)")
    assert path_of(page) == ["0", "ProducerWrite(A)"]
    expect(page.locator('#variables tr[data-name="written"] td.changed')).to_have_text("1")
    page.click("#back")
    expect(page.locator("#state-heading")).to_have_text("State after step 0: Init")
    page.click("#forward")
    expect(page.locator("#state-heading")).to_have_text("State after step 1: ProducerWrite(A)")
    page.go_back()  # the browser's own history
    expect(page.locator("#state-heading")).to_have_text("State after step 0: Init")
    action(page, "ReplicaCrash(A)").click()  # a branch off step 0
    expect(page.locator("#state-heading")).to_have_text("State after step 1: ReplicaCrash(A)")
    assert path_of(page) == ["0", "ReplicaCrash(A)"]
    expect(page.locator("#steps li")).to_have_count(2)


@browser_test
def test_page_loads_a_counterexample_steps_through_it_and_branches_off(page, server_url, tmp_path):
    page.goto(server_url)
    page.fill("#load-source", "case-l-hw")
    page.click("#load-button")
    expect(page.locator("#title")).to_have_text(f"Loaded: {CASE_L.title}")
    expect(page.locator("#steps li")).to_have_count(len(CASE_L_PATH))
    expect(page.locator("#state-heading")).to_have_text("State after step 0: Init")
    page.click("#forward")
    expect(page.locator("#state-heading")).to_have_text(f"State after step 1: {CASE_L_PATH[1]}")
    page.click("#forward")
    expect(page.locator("#state-heading")).to_have_text(f"State after step 2: {CASE_L_PATH[2]}")
    page.locator("#steps li").nth(len(CASE_L_PATH) - 1).click()  # jump to the end
    expect(page.locator('#properties tr[data-name="NoCommittedDataLoss"]')).to_have_class("fails")
    page.locator("#steps li").nth(3).click()
    action(page, "ReplicaCrash(B)").click()  # branch off step 3
    expect(page.locator("#steps li")).to_have_count(5)
    assert path_of(page) == [*CASE_L_PATH[:4], "ReplicaCrash(B)"]
    itf = next(path for path in write_reports(CASE_L.trace, "NoCommittedDataLoss", tmp_path, "case-l", "Case L")
               if path.name.endswith(".itf.json"))
    page.set_input_files("#upload", str(itf))
    expect(page.locator("#title")).to_contain_text("NoCommittedDataLoss violated")
    expect(page.locator("#steps li")).to_have_count(len(CASE_L_PATH))


@browser_test
def test_page_reproduces_case_l_by_clicking(page, server_url):
    page.goto(server_url)
    page.select_option("#initial", CASE_L_PATH[0])  # B leads
    expect(page.locator("#state-heading")).to_have_text("State after step 0: Init")
    expect(page.locator("#initial")).to_have_value(CASE_L_PATH[0])
    for number, step in enumerate(CASE_L_PATH[1:], start=1):
        action(page, step).click()
        expect(page.locator("#state-heading")).to_have_text(f"State after step {number}: {step}")
    row = page.locator('#properties tr[data-name="NoCommittedDataLoss"]')
    expect(row).to_have_class("fails")
    expect(row.locator("td.verdict")).to_have_text(f"fails since step {CASE_L_BREAKS['NoCommittedDataLoss']}")
    assert path_of(page) == CASE_L_PATH


@browser_test
def test_page_names_a_bad_action_in_the_url_and_the_server_stays_up(page, server_url):
    page.goto(f"{server_url}?path=0,ProducerWrite(A),Bogus(B)")
    expect(page.locator("#error")).to_be_visible()
    expect(page.locator("#error-message")).to_contain_text("'Bogus(B)' is not an action")
    expect(page.locator("#error-message")).to_contain_text("enabled there:")
    with urllib.request.urlopen(f"{server_url}api/state", timeout=10) as answer:
        assert answer.status == 200
    page.locator('#error-enabled button.action[data-action="ReplicaCrash(A)"]').click()
    expect(page.locator("#error")).to_be_hidden()
    assert path_of(page) == ["0", "ProducerWrite(A)", "ReplicaCrash(A)"]


@browser_test
def test_page_shows_a_control_plane_model_named_in_the_url(page, server_url):
    page.goto(f"{server_url}?path=0&model=controller&config=%7B%7D")
    expect(page.locator("#model")).to_contain_text("controller model")
    action(page, "BrokerWinsElection(0)").click()
    expect(page.locator('#variables tr[data-name="controllerEpoch"] td.changed')).to_have_text("1")
    assert "model=controller" in page.url
