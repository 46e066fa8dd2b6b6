"""Comprehension questions: settings and prompts, LLM generation, parsing, review."""
