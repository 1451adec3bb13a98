"""The taxonomy's error types: one for every taxonomy problem, one for malformed input files."""

from __future__ import annotations

from hierbench.idnames import IdNameFormatError


class TaxonomyError(ValueError):
    """A taxonomy input or result is wrong; the message says which file or class to fix."""


class TaxonomyInputError(TaxonomyError, IdNameFormatError):
    """A class list or tree file the taxonomy reads is not a well-formed `<id> <name>` file."""
