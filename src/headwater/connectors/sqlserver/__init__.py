"""SQL Server connector: CDC change tables polled in LSN order (tested against an emulation)."""
