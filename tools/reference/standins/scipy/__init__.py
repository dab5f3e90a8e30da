"""Stand-in for scipy: only scipy.spatial.transform.Rotation (see there)."""

__version__ = "0-standin"
