"""Headwater: change data capture into a durable topic log, materialized with Spark."""

__version__ = "0.1.0"
