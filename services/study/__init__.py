"""A study as files and as data: study folder reading, wording, consent, export and its dictionary."""
