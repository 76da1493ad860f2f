"""Moved: the OpenAI wire shapes (``read_chunk``, ``ChunkWriter``, ``sum_usage``...) live in
``toolguard._openai``, shared by every door. Kept as a re-export until every importer reads them there."""

from __future__ import annotations

from .._openai import ChunkWriter, UpstreamChunk, read_chunk, sum_usage

__all__ = ["ChunkWriter", "UpstreamChunk", "read_chunk", "sum_usage"]
