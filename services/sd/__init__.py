"""Semantic differential (paper 002): the form and the analysis."""
