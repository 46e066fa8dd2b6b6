"""Gradio tabs: layout and event wiring only; all logic is in services/."""
