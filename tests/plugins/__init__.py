"""Protocols as a lab's plugin would write them, each one module (and its own static files) that
TRADLAB_PLUGINS names; the tests load them as the app does ("module:attribute")."""
