"""``HostileUpstream``: a fake, fault-injecting model endpoint for fuzzing the proxy (a named test double).

Theory of operation
-------------------
A raw asyncio TCP server on 127.0.0.1, run on its own event loop in a daemon thread. It reads one HTTP/1.1
request per connection (head up to a blank line, body by ``Content-Length``), picks a *script* by the
request's ``x-fuzz-script`` header (else the JSON body's ``model``), and plays the script's response for that
attempt (the n-th request of a script plays its n-th response, the last one repeating). A response is a list
of steps, plain JSON so a finding can store it: ``["w", base64]`` write and drain, ``["s", ms]`` sleep,
``["x"]`` abort the connection (RST); the end of the steps closes it. Nothing is HTTP-aware on the way out:
the steps are the bytes, so a script can send garbage, broken framing, giant chunks, a slow drip or nothing.

While a script plays, the server also waits for the proxy to close the connection; ``active()`` lists the
connections whose script is still running and whose peer has not closed: after the client has its response,
anything left there is a connection the proxy leaked. Work is O(bytes written) per connection.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import socket
import threading
from dataclasses import dataclass, field
from typing import Any

__all__ = ["HostileUpstream", "Step", "steps_to_text", "write_step"]

Step = list[Any]
HEAD_TIMEOUT = 5.0
"""Seconds the server waits for a request head before giving up on a connection."""
MAX_REQUEST_BYTES = 64 * 1024 * 1024


def write_step(data: bytes) -> Step:
    return ["w", base64.b64encode(data).decode()]


def steps_to_text(steps: list[Step], limit: int = 300) -> str:
    """A short readable rendering of a response script (for finding messages)."""
    parts = []
    for step in steps:
        if step[0] == "w":
            data = base64.b64decode(step[1])
            parts.append(
                repr(data[:limit]) + (f"...(+{len(data) - limit} bytes)" if len(data) > limit else "")
            )
        elif step[0] == "s":
            parts.append(f"<sleep {step[1]} ms>")
        else:
            parts.append(f"<{step[0]}>")
    return " ".join(parts)


@dataclass(slots=True)
class _Conn:
    script: str = ""
    attempt: int = 0
    running: bool = True
    peer_closed: bool = False
    request: bytes = b""


@dataclass(slots=True)
class _Script:
    responses: list[list[Step]]
    requests: list[bytes] = field(default_factory=list)


class HostileUpstream:
    """The fault-injecting fake upstream (see the module docstring). ``start()``, ``load()``, ``stop()``."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._lock = threading.Lock()
        self._scripts: dict[str, _Script] = {}
        self._conns: list[_Conn] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    # control (called from the fuzzing thread) ------------------------------------------------------------
    def start(self) -> None:
        ready = threading.Event()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]

        def main() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            self._server = loop.run_until_complete(asyncio.start_server(self._handle, sock=sock, backlog=256))
            ready.set()
            loop.run_forever()
            for task in list(self._tasks):
                task.cancel()
            loop.run_until_complete(asyncio.gather(*self._tasks, return_exceptions=True))
            loop.close()

        self._thread = threading.Thread(target=main, name="hostile-upstream", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the hostile upstream did not start")

    def stop(self) -> None:
        loop, server = self._loop, self._server
        if loop is None or server is None:
            return

        def shutdown() -> None:
            server.close()
            for task in list(self._tasks):
                task.cancel()
            loop.call_later(0.05, loop.stop)

        loop.call_soon_threadsafe(shutdown)
        if self._thread is not None:
            self._thread.join(10)
        self._loop = self._server = self._thread = None

    def load(self, script: str, responses: list[list[Step]]) -> None:
        with self._lock:
            self._scripts[script] = _Script([list(r) for r in responses] or [[]])

    def forget(self, script: str) -> None:
        with self._lock:
            self._scripts.pop(script, None)
            self._conns = [c for c in self._conns if c.running and not c.peer_closed]

    def requests(self, script: str) -> list[bytes]:
        with self._lock:
            entry = self._scripts.get(script)
            return list(entry.requests) if entry else []

    def active(self) -> list[str]:
        """Scripts with a connection still playing whose peer has not closed it."""
        with self._lock:
            return [f"{c.script}#{c.attempt}" for c in self._conns if c.running and not c.peer_closed]

    # server side (on the upstream's own loop) ---------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        conn = _Conn()
        with self._lock:
            self._conns.append(conn)
        try:
            request = await asyncio.wait_for(self._read_request(reader), HEAD_TIMEOUT)
            if request is None:
                return
            conn.request = request
            script_id = _script_id(request)
            with self._lock:
                entry = self._scripts.get(script_id)
                if entry is None:
                    steps: list[Step] = [write_step(_NO_SCRIPT)]
                else:
                    conn.attempt = len(entry.requests)
                    entry.requests.append(request)
                    steps = entry.responses[min(conn.attempt, len(entry.responses) - 1)]
            conn.script = script_id
            play = asyncio.ensure_future(self._play(steps, writer))
            eof = asyncio.ensure_future(reader.read(1))
            done, _ = await asyncio.wait({play, eof}, return_when=asyncio.FIRST_COMPLETED)
            if eof in done and play not in done:
                conn.peer_closed = True
                play.cancel()
            for fut in (play, eof):
                if not fut.done():
                    fut.cancel()
            await asyncio.gather(play, eof, return_exceptions=True)
        except (TimeoutError, OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except asyncio.CancelledError:
            pass
        finally:
            conn.running = False
            with contextlib.suppress(Exception):  # the connection may already be gone
                writer.close()
            if task is not None:
                self._tasks.discard(task)

    async def _read_request(self, reader: asyncio.StreamReader) -> bytes | None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = await reader.read(65536)
            if not chunk:
                return None
            head += chunk
            if len(head) > MAX_REQUEST_BYTES:
                return None
        head, _, body = head.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip() or 0)
        if length > MAX_REQUEST_BYTES:
            return None
        while len(body) < length:
            chunk = await reader.read(length - len(body))
            if not chunk:
                return None
            body += chunk
        return head + b"\r\n\r\n" + body

    async def _play(self, steps: list[Step], writer: asyncio.StreamWriter) -> None:
        for step in steps:
            kind = step[0]
            if kind == "w":
                writer.write(base64.b64decode(step[1]))
                await writer.drain()
            elif kind == "s":
                await asyncio.sleep(float(step[1]) / 1000.0)
            elif kind == "x":
                writer.transport.abort()
                return
        if writer.can_write_eof():
            writer.write_eof()


_NO_SCRIPT = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


def _script_id(request: bytes) -> str:
    head, _, body = request.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"x-fuzz-script":
            return value.strip().decode("latin-1")
    try:
        model = json.loads(body).get("model")
    except (ValueError, AttributeError):
        return ""
    return model if isinstance(model, str) else ""
