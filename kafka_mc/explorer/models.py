"""The models the explorer shows, each rebuilt from its name and configuration (what a shared
link carries), one instance per configuration."""

from __future__ import annotations

import dataclasses
import json
from functools import lru_cache
from typing import Any

from kafka_mc.checker.scenario import scenario_models
from kafka_mc.model import Config, ConfigError
from kafka_mc.model.interface import Model
from kafka_mc.model.shape import short_repr


class ModelError(ValueError):
    """A model name or configuration that names no model: the message says what is allowed."""


def model_settings(model: Model) -> tuple[str, dict[str, Any]]:
    """What rebuilds `model`: its name and configuration."""
    return model.name, model.config.to_dict()


def model_for(name: str, settings: dict[str, Any]) -> Model:
    """The model named `name` (one of `checker.scenario.scenario_models()`) under `settings`;
    ModelError naming the bad name or setting."""
    return _cached(name, json.dumps(settings, sort_keys=True))


def parse_settings(text: str) -> dict[str, Any]:
    """A configuration from the URL, a JSON object; ModelError when it is not one."""
    try:
        settings = json.loads(text)
    except (ValueError, RecursionError):
        settings = None
    if not isinstance(settings, dict):
        raise ModelError(f"config must be a JSON object of the model's settings, not {short_repr(text)}")
    return settings


@lru_cache(maxsize=64)
def _cached(name: str, settings_json: str) -> Model:
    models = scenario_models()
    if name not in models:
        raise ModelError(f"model {short_repr(name)} is unknown; allowed: {', '.join(models)}")
    model_class, config_class = models[name]
    settings = json.loads(settings_json)
    allowed = [field.name for field in dataclasses.fields(config_class)]
    unknown = sorted(set(settings) - set(allowed))
    if unknown:
        raise ModelError(f"config: {', '.join(unknown)} is not a setting of the {name} model; its settings: "
                         + ", ".join(allowed))
    try:  # a replication trace may be a simulation's, past `check`'s bounds (as `counterexamples.itf` reads it)
        config = Config.for_simulation(**settings) if config_class is Config else config_class(**settings)
    except (ConfigError, ValueError, TypeError) as error:
        raise ModelError(f"config of the {name} model: {error}") from None
    return model_class(config)
