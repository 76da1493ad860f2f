"""The file ``toolguard vllm-plugin-path`` prints, for ``vllm serve --tool-parser-plugin PATH``.

vLLM loads a plugin given as a path by executing the file as a top-level module, so this file imports
``toolguard.vllm`` by its absolute name; that registers the ``toolguard`` tool parser.
"""

import toolguard.vllm  # noqa: F401
