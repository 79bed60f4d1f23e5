"""The property type shared by every model and engine (`model.interface.Property`)."""

from kafka_mc.model.interface import ALWAYS, SOMETIMES, Property

__all__ = ["ALWAYS", "SOMETIMES", "Property"]
