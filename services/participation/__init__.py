"""What a participant does: their items, submissions, assignment, reassignment, dropouts, upkeep, request limits."""
