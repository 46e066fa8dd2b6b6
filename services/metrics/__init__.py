"""Translation-quality metrics: the registry (registry.py) and the metrics it loads on demand."""
