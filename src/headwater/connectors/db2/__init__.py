"""Db2 connector: ASN change-data tables polled in commit order (tested against an emulation)."""
