"""Change-table capture: CDC change rows polled from tables, merged in LSN order."""
