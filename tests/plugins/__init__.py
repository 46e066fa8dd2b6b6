"""Protocol plugins the tests load as a lab would (TRADLAB_PLUGINS), kept outside the packages."""
