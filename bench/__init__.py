"""Benchmark suite for eval_banana (issue 7): `python bench/run.py` or `invoke bench`."""
