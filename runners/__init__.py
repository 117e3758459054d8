"""The `equita` command line and, later, the model runner."""
