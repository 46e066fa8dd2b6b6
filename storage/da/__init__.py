"""Direct assessment's SQL (paper 001): the campaign's segments and HITs, the raters' judgments
and outcomes, its rows of the participant page and of the export."""
