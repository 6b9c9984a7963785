"""Benchmarks of nvcre-hooks: ``python -m bench`` (``make bench``); see BENCHMARKS.md."""
