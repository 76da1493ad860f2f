"""The labelled runaway corpus (``corpus.py``, also used by benchmarks/runaway.py) and its tests."""
