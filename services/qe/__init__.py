"""The QE gender audit and quality-aware reranking (paper 003), with its benchmarks' readers."""
