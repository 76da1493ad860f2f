"""The client-facing stdio transport: newline-delimited JSON-RPC on stdin/stdout, on the event loop.

The SDK's ``stdio_server`` reads stdin and writes stdout through worker threads (``anyio.wrap_file``): three
thread hand-offs per call, each of which waits for a free core on a loaded machine. This transport yields the
same ``SessionMessage`` streams, parsed and serialised by the SDK's own ``jsonrpc_message_adapter``, but reads
and writes the pipes on the event loop (asyncio pipe transports). As the SDK does, it moves the wire to
private descriptors and points fd 0 at the null device and fd 1 at stderr, so a stray ``print`` cannot corrupt
the protocol. A frame longer than ``max_frame`` bytes, or one that is not JSON-RPC, is delivered as an
exception (the session answers it with a parse error) and the stream goes on. When stdin or stdout is not a
pipe, socket or terminal (a regular file), it falls back to the SDK's ``stdio_server``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import AsyncIterator
from typing import Any

import anyio
from mcp.shared.message import SessionMessage
from mcp_types import jsonrpc_message_adapter

__all__ = ["DEFAULT_MAX_FRAME", "stdio_streams"]

DEFAULT_MAX_FRAME = 16 << 20  # bytes in one JSON-RPC line


class FrameTooLarge(ValueError):
    """A line on stdin exceeded the frame cap; it was skipped."""


def _pipe_like(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


@contextlib.asynccontextmanager
async def stdio_streams(*, max_frame: int = DEFAULT_MAX_FRAME) -> AsyncIterator[tuple[Any, Any]]:
    """``(read_stream, write_stream)`` of ``SessionMessage`` over stdin/stdout. See the module docstring."""
    if not (_pipe_like(0) and _pipe_like(1)):
        from mcp.server.stdio import stdio_server

        async with stdio_server() as streams:
            yield streams
        return
    loop = asyncio.get_running_loop()
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    reader = asyncio.StreamReader(limit=max_frame)
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0)
    )
    write_transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(wire_out, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
    to_session, read_stream = anyio.create_memory_object_stream[Any](0)
    write_stream, from_session = anyio.create_memory_object_stream[Any](0)

    async def pump_in() -> None:
        async with to_session:
            while True:
                try:
                    line = await reader.readuntil(b"\n")
                except asyncio.IncompleteReadError as end:
                    line = end.partial
                    if not line.strip():
                        return
                except asyncio.LimitOverrunError:
                    await _skip_line(reader, max_frame)
                    await to_session.send(FrameTooLarge(f"a frame longer than {max_frame} bytes was skipped"))
                    continue
                if not line.strip():
                    continue
                try:
                    message = jsonrpc_message_adapter.validate_json(line, by_name=False)
                except ValueError as exc:
                    await to_session.send(exc)
                    continue
                await to_session.send(SessionMessage(message))

    async def pump_out() -> None:
        async with from_session:
            async for item in from_session:
                data = item.message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8")
                writer.write(data + b"\n")
                await writer.drain()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(pump_in)
            tg.start_soon(pump_out)
            try:
                yield read_stream, write_stream
            finally:
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    await write_stream.aclose()
                    while write_transport.get_write_buffer_size():
                        await anyio.sleep(0.01)
                tg.cancel_scope.cancel()
    finally:
        read_transport.close()
        write_transport.close()
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)


async def _skip_line(reader: asyncio.StreamReader, limit: int) -> None:
    """Discard buffered input up to and including the next newline (or the end of input)."""
    while True:
        try:
            await reader.readuntil(b"\n")
            return
        except asyncio.LimitOverrunError as exc:
            await reader.readexactly(min(exc.consumed, limit))
        except asyncio.IncompleteReadError:
            return
