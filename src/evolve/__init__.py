"""evolve: agents that learn from their users safely."""

__version__ = "0.1.0"
