"""Direct assessment (paper 001): campaign, HITs, rendering, published formats and the analysis."""
