"""Domain logic. Plain Python: no gradio import, testable without a server."""
