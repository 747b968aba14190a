"""Many jobs at once: find them, diagnose each (locally or on Ray), store the rows, report on the fleet."""
