"""The runner: scores a model on the benchmarks and reports, compares and publishes the results."""


def main() -> None:
    """The `equita` command. Importing the CLI loads torch and transformers (seconds): a Ctrl-C
    meanwhile is an interruption, said in one line, not a traceback from inside an import."""
    import sys

    try:
        from .cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("interrupted while starting; nothing was done\n")
        raise SystemExit(130) from None
    cli_main()
