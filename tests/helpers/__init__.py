"""Helpers the test modules share (a test module imports no other test module; fixtures shared
across files live in tests/conftest.py). What the benchmarks need too lives in harness/."""
