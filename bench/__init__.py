"""Reproducible benchmarks of contextfit against the alternatives (`make bench`)."""
