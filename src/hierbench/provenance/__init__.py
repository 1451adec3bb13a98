"""Provenance: artifacts and their records, hashes, verified reads, the Final lock and seal."""
