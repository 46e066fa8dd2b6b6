"""What a participant does: their items, submissions, the workflow, assignment, dropouts, request limits."""
