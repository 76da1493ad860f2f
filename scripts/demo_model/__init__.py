"""How the embedded demo model (``toolguard/_models/demo``) is made: not shipped, not needed at run time.

- ``synthetic``: tool-calling dialogues over the example tool sets (``schemas/tools``), with tool results
  from the demo's fake backends (``toolguard.local._demo_tools``).
- ``train``: tokenizer + ~1.2M-parameter Llama trained on them on CPU, and the held-out evaluation.

``scripts/train_demo_model.py`` runs it; ``benchmarks/demo_model.py`` and ``tests/demo`` evaluate with it.
"""
