"""The explorer's web app (Starlette): the page, its script, and the JSON API it calls.

`GET /api/state?path=0,ProducerWrite(A)&step=1` answers `views.step_view` of that step of that path
(`step` defaults to the last), of the app's model or of the one `model` and `config` (a JSON object
of its settings) name; a path that cannot be followed, or a bad step, model or config, is answered
400 with a message naming it and, for a path, the actions enabled where it stopped.
`POST /api/load` takes `{"source": FILE or shipped scenario name}` or `{"name": FILE NAME, "text":
its content}` (an upload) and answers the trace's model, configuration and path.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any, Iterable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from kafka_mc.checker.scenario import Scenario
from kafka_mc.counterexamples.html import STYLE
from kafka_mc.counterexamples.tables import TABLE_STYLE
from kafka_mc.model.interface import Property

from .loading import LoadError, load_counterexample, load_uploaded
from .models import ModelError, model_for, model_settings, parse_settings
from .paths import PathError, follow, split_path, trace_path
from .views import step_view


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


class Explorer:
    """The API over one default model (`name`, `settings`) and the path the page opens on, with
    `extra` properties (a user's) evaluated along every path."""

    def __init__(self, name: str, settings: dict[str, Any], start: tuple[str, ...] = ("0",), title: str = "",
                 extra: Iterable[Property] = ()):
        self.default = (name, settings)
        self.start, self.title = start, title
        self.extra = tuple(extra)
        model_for(name, settings)  # ModelError now, not at the first request

    async def page(self, request: Request) -> Response:
        return HTMLResponse(_asset("page.html").replace("/* STYLE */", f"{STYLE}\n{TABLE_STYLE}"))

    async def script(self, request: Request) -> Response:
        return Response(_asset("explorer.js"), media_type="text/javascript")

    async def state(self, request: Request) -> Response:
        query = request.query_params
        try:
            name = query.get("model", self.default[0])
            settings = parse_settings(query["config"]) if "config" in query else self.default[1]
            model = model_for(name, settings)
            parts = split_path(query["path"]) if "path" in query else list(self.start)
            walk = follow(model, parts)
            at = _step(query.get("step"), len(walk.states) - 1)
        except PathError as error:
            return JSONResponse({"error": str(error), "valid": list(error.valid), "enabled": list(error.enabled)}, 400)
        except ModelError as error:
            return JSONResponse({"error": str(error)}, 400)
        view = step_view(walk, at, self.extra)
        view["default"] = model_settings(model) == self.default
        view["title"] = self.title if view["default"] and walk.texts == self.start else ""
        return JSONResponse(view)

    async def load(self, request: Request) -> Response:
        try:
            body = json.loads(await request.body())
            if not isinstance(body, dict):
                raise ValueError
        except (ValueError, RecursionError):
            return JSONResponse({"error": "send a JSON object: {\"source\": FILE} or {\"name\": ..., \"text\": ...}"},
                                400)
        try:
            if isinstance(body.get("text"), str):
                scenario = load_uploaded(str(body.get("name", "")), body["text"])
            else:
                scenario = load_counterexample(str(body.get("source", "")))
        except LoadError as error:
            return JSONResponse({"error": str(error)}, 400)
        return JSONResponse(self.loaded_view(scenario))

    def loaded_view(self, scenario: Scenario) -> dict[str, Any]:
        """What the page needs to open a loaded trace: its model, configuration and path."""
        name, settings = model_settings(scenario.trace.model)
        return {"model": name, "config": settings, "default": (name, settings) == self.default,
                "path": list(trace_path(scenario.trace)), "title": scenario.title}


def _step(text: str | None, last: int) -> int:
    if text is None:
        return last
    if not (text.isascii() and text.isdigit()) or int(text) > last:
        raise PathError(f"step must be a step of the path, from 0 to {last}, not {text!r}")
    return int(text)


def explorer_app(explorer: Explorer) -> Starlette:
    """The app serving `explorer`."""
    return Starlette(routes=[
        Route("/", explorer.page),
        Route("/explorer.js", explorer.script),
        Route("/api/state", explorer.state),
        Route("/api/load", explorer.load, methods=["POST"]),
    ])
