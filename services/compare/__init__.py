"""Side-by-side comparison (issue 54, point 1): two to N systems' outputs of one source on one
screen, scored, preferred or ranked (docs/side-by-side.md)."""
