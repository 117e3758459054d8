"""Backends: how a model answers requests (in this process with transformers, or an OpenAI-compatible server), and what only they use."""
