"""Splits: who trains, who tunes, who is sealed test; stratified sampling."""
