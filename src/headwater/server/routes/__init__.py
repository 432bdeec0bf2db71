"""The REST API's routers, one module per resource (see `headwater.server.app.ROUTERS`)."""
