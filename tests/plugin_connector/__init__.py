"""A connector defined outside headwater, registered through an entry point."""
