"""A study as files and as data: study folder reading and import, wording, consent, participants, export, variants."""
