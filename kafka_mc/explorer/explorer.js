// kafka-mc explore: the page. Everything it shows comes from GET /api/state; the URL holds the path
// (initial state index, then actions), the step shown and, for a model other than the server's, the
// model and its configuration, so that a link reproduces the view.
"use strict";

const view = { path: ["0"], at: 0, model: null, config: null, isDefault: true };
let loadedTitle = "";  // of the counterexample loaded last, from the page
const $ = id => document.getElementById(id);

function element(tag, text, className) {
  const made = document.createElement(tag);
  if (text !== undefined) made.textContent = text;
  if (className) made.className = className;
  return made;
}

// commas and parentheses kept as they are, so that a path stays readable in the address bar
const encode = text => encodeURIComponent(text).replace(/%2C/g, ",");

function query(path, at, model, config, isDefault) {
  let text = `?path=${path.map(encode).join(",")}&step=${at}`;
  if (!isDefault) text += `&model=${encode(model)}&config=${encode(JSON.stringify(config))}`;
  return text;
}

function go(path, at, model = view.model, config = view.config, isDefault = view.isDefault) {
  const target = query(path, at, model, config, isDefault);
  history.pushState(null, "", target);
  show(target);
}

async function show(search) {
  const answer = await fetch("/api/state" + search);
  const body = await answer.json();
  if (!answer.ok) return showError(body, new URLSearchParams(search));
  Object.assign(view, { path: body.path, at: body.at, model: body.model, config: body.config,
                        isDefault: body.default });
  if (!new URLSearchParams(location.search).has("path")) {
    history.replaceState(null, "", query(view.path, view.at, view.model, view.config, view.isDefault));
  }
  render(body);
}

function showError(body, params) {
  $("error").hidden = false;
  $("error-message").textContent = body.error;
  const enabled = $("error-enabled");
  enabled.replaceChildren();
  if (!body.valid || !body.valid.length) return;
  const model = params.get("model") || view.model, isDefault = !params.has("model");
  const config = params.has("config") ? JSON.parse(params.get("config")) : view.config;
  const back = element("button", `Go to step ${body.valid.length - 1}, where the path stops`);
  back.id = "error-back";
  back.onclick = () => go(body.valid, body.valid.length - 1, model, config, isDefault);
  enabled.append(back, element("span", " or take an enabled action: "));
  for (const action of body.enabled) {
    const button = element("button", action, "action");
    button.dataset.action = action;
    button.onclick = () => go([...body.valid, action], body.valid.length, model, config, isDefault);
    enabled.append(button, " ");
  }
}

function render(body) {
  $("error").hidden = true;
  $("title").textContent = body.title || loadedTitle;
  $("model").textContent = `${body.model} model: ` +
    Object.entries(body.config).map(([key, value]) => `${key}=${value}`).join(", ");
  $("back").disabled = body.at === 0;
  $("forward").disabled = body.at === body.path.length - 1;
  const initial = $("initial");
  initial.replaceChildren(...Array.from({ length: body.initial_states }, (_, index) => element("option", index)));
  initial.value = body.path[0];
  renderSteps(body);
  $("state-heading").textContent = `State after step ${body.at}: ${body.steps[body.at].action}`;
  $("picture").innerHTML = body.picture || "";  // drawn and escaped by the server (counterexamples/html.py)
  $("variables").tBodies[0].replaceChildren(...body.variables.map(variable => {
    const row = element("tr");
    row.dataset.name = variable.name;
    row.append(element("td", variable.name), element("td", variable.value, "value" + (variable.changed ? " changed" : "")));
    return row;
  }));
  renderActions(body);
  renderProperties(body);
}

function renderSteps(body) {
  $("steps").replaceChildren(...body.steps.map(step => {
    const item = element("li", step.action);
    item.classList.toggle("current", step.number === body.at);
    item.classList.toggle("ahead", step.number > body.at);
    item.classList.toggle("failing", step.failing.length > 0);
    if (step.failing.length) item.title = "failing: " + step.failing.join(", ");
    item.onclick = () => go(body.path, step.number);
    return item;
  }));
}

const shown = value => JSON.stringify(value === undefined ? null : value);

function renderActions(body) {
  const list = $("actions");
  if (!body.enabled.length) return list.replaceChildren(element("li", "none: a deadlock"));
  list.replaceChildren(...body.enabled.map(enabled => {
    const item = element("li"), button = element("button", enabled.action, "action");
    button.dataset.action = enabled.action;
    button.onclick = () => go([...body.path.slice(0, body.at + 1), enabled.action], body.at + 1);
    const changes = element("ul", undefined, "changes");
    changes.append(...enabled.changes.map(change =>
      element("li", `${change.variable}: ${shown(change.before)} \u2192 ${shown(change.after)}`)));
    if (!enabled.changes.length) changes.append(element("li", "no variable changes"));
    item.append(button, changes);
    return item;
  }));
}

function verdict(property) {
  if (property.error) return ["error", property.error];
  if (property.kind === "invariant") {
    return property.holds ? ["holds", "holds"] : ["fails", `fails since step ${property.failing_since}`];
  }
  if (property.holds) return ["holds", "holds here"];
  return property.reached_at === null ? ["unreached", "not yet on this path"]
                                      : ["reached", `held at step ${property.reached_at}`];
}

function renderProperties(body) {
  $("properties").tBodies[0].replaceChildren(...body.properties.map(property => {
    const [status, text] = verdict(property), row = element("tr", undefined, status);
    row.dataset.name = property.name;
    row.title = property.source;
    const kind = property.kind + (property.on_step ? " (of the step into this state)" : "");
    row.append(element("td", property.name), element("td", kind), element("td", text, "verdict"));
    return row;
  }));
}

async function load(body) {
  const answer = await fetch("/api/load", { method: "POST", headers: { "Content-Type": "application/json" },
                                            body: JSON.stringify(body) });
  const loaded = await answer.json();
  if (!answer.ok) return showError(loaded, new URLSearchParams(location.search));
  loadedTitle = `Loaded: ${loaded.title}`;
  go(loaded.path, 0, loaded.model, loaded.config, loaded.default);
}

$("back").onclick = () => go(view.path, view.at - 1);
$("forward").onclick = () => go(view.path, view.at + 1);
$("initial").onchange = event => go([event.target.value], 0);
$("load-button").onclick = () => load({ source: $("load-source").value });
$("load-source").onkeydown = event => { if (event.key === "Enter") $("load-button").click(); };
$("upload").onchange = async event => {
  const file = event.target.files[0];
  if (file) load({ name: file.name, text: await file.text() });
};
window.onpopstate = () => show(location.search);
show(location.search);
