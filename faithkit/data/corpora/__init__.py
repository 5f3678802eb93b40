"""Benchmark and training corpora, each read into faithkit's one row schema."""
