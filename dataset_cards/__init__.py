"""Jinja2 templates of the dataset cards (README.md of each built dataset)."""
