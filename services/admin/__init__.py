"""Designer-facing services: admin access control and progress tables, participant management, recording review."""
