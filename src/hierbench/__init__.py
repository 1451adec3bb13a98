"""hierbench: a reproducible pipeline for hierarchy-aware bird image retrieval."""

__version__ = "0.1.0"
