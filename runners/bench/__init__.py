"""`equita bench`: equita against its peers, one process per timed run."""
