"""Datastream's stream model on Headwater: connection profiles, streams, their states,
errors and discover (docs/streams.md)."""
