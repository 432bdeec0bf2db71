"""Datastream events (docs/datastream.md) into the pipeline's Delta modes: from the topic log
or from the files destination's directory."""
