"""What a participant does: their items, submissions, assignment, reassignment, upkeep, request limits."""
