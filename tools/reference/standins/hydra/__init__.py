"""Stand-in for hydra (hydra.utils.instantiate only)."""

__version__ = "0-standin"
