"""Leaves shared by every package: vocabulary, paging, settings, analysis input/output, file writing, the worker."""
