"""`python -m equita.runners`: the `equita` command, for when its script is not on PATH."""

from equita.runners import main

main()
