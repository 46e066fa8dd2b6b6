"""What the tests and the benchmarks share to drive the launched app (a subprocess server):
launching it, the demo and load studies, a light HTTP client, the figures they report. It imports
neither tests nor benchmarks (tests/test_test_layout.py checks)."""
