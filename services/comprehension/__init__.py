"""What the comprehension questions' generation (services.questions) and the auto-QA metric
(services.metrics.auto_qa) share: the study's [questions] section with its prompts, and the
reading of questions and answers out of an LLM's text. It sits below both, so neither reaches
up into the other."""
