"""evaluate metric modules, one folder each (metrics/<name>/<name>.py + card + app.py)."""
