"""Helpers for tests, the demo and benchmarks: a throwaway PostgreSQL, topic replay."""
