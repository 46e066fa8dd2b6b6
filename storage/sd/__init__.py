"""The semantic differential's SQL (paper 002): its sentences and pairs, the ratings, its rows of
the participant page and of the export."""
