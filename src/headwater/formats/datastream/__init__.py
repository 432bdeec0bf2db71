"""Google Datastream's event format (`headwater.event.format=datastream`): unified types
(`unified`), per-source definitions (`sources`), per-table plans (`plan`) and the renderer
(`renderer`).  docs/datastream.md documents the choices."""
