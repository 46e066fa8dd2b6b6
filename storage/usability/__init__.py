"""The usability study's SQL (paper 000): its exchanges, recordings and translations, answers,
validations and surveys, the work pool its receivers, validators and raters take items from,
its metrics, its rows of the participant page and of the export."""
