"""Listening tests (issue 54, point 2): ACR, DCR and CCR ratings of speech audio with P.808's
listening checks (docs/listening.md)."""
