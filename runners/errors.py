"""The errors a model backend raises, in a module of their own so that every backend can import them cheaply."""


class ModelError(Exception):
    """A model that cannot be found, loaded or run; the message says which and why."""
