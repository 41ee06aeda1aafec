"""The daemon's work: schedules and the jobs they run."""
