"""``toolguard serve``: an OpenAI-compatible HTTP endpoint over a local transformers model, guarded.

Theory of operation: a Starlette app with five routes (``POST /v1/chat/completions``, ``GET /v1/models``,
``GET /v1/models/{id}``, ``GET /health`` and its alias ``GET /healthz``) in front of one ``LocalGenerator``.
Everything that makes the answer trustworthy (grammar-enforced calls, end-of-turn after a call, the runaway
stop, truthful finish reasons) is the generator's; this module only translates HTTP into ``chat()`` keyword
arguments and OpenAI-shaped dicts back into JSON or Server-Sent Events. The model is a folder, a GGUF file
or ``"smollm2"`` (``toolguard.local.load_model``); ``unenforced="check"`` (the default) serves every shipped
tool set, checking after decoding the keywords the grammar cannot enforce.

Concurrency: one generation at a time. An ``asyncio.Lock`` admits one request to the model; its decoding loop
runs in a worker thread and hands chunks to the event loop through a queue, so the server stays responsive
(``/health`` answers during a generation). When a streaming client disconnects, the worker is told to stop
after its current token and the lock is released once it has. Request errors (a bad body, an unknown tool in
``tool_choice``, a schema the grammar engine refuses) are detected before the first byte is sent and come
back as OpenAI-style ``400`` errors; an error in the middle of a stream ends it with an ``error`` event.

Per request the cost is the generator's (one forward pass per sampled token) plus O(size of the response)
JSON encoding.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._choice import parse_tool_choice
from .._decisions import Action, Decision, LogFormat, log_decision
from .._exceptions import ConfigError, GrammarError, SchemaError, ToolError, UsageError
from .._openai import error_body, exception_code

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from ._generator import LocalGenerator
    from ._processor import Unenforced

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_PORT",
    "MAX_TOKENS_CAP",
    "create_serve_app",
    "load_local_model",
    "model_id",
    "serve",
]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
#: Completion tokens when the request sets neither ``max_tokens`` nor ``max_completion_tokens``.
DEFAULT_MAX_TOKENS = 512
#: The most completion tokens one request may ask for.
MAX_TOKENS_CAP = 4096
#: Largest request body accepted, in bytes.
MAX_BODY_BYTES = 4 * 1024 * 1024

log = logging.getLogger("toolguard.serve")

_CLIENT_ERRORS = (UsageError, SchemaError, ToolError, GrammarError, ConfigError)


class _BadRequest(Exception):
    def __init__(self, message: str, *, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.param = param
        self.code = code


def load_local_model(path: str | Path | None = None, *, threads: int | None = None) -> tuple[Any, Any]:
    """``(model, tokenizer)``: ``toolguard.local.load_model`` (a folder, a GGUF file or ``"smollm2"``)."""
    from ._load import load_model

    return load_model(path, threads=threads)


# -- request parsing ----------------------------------------------------------------------------------------


def _chat_kwargs(body: Any) -> dict[str, Any]:
    """Validate an OpenAI chat-completions body and map it to ``LocalGenerator.chat`` keyword arguments."""
    if not isinstance(body, Mapping):
        raise _BadRequest("the request body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _BadRequest("'messages' must be a non-empty array", param="messages")
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or not isinstance(m.get("role"), str):
            raise _BadRequest(f"messages[{i}] must be an object with a 'role'", param=f"messages[{i}]")
        content = m.get("content")
        if isinstance(content, list):  # content parts: text only
            texts = [p.get("text", "") for p in content if isinstance(p, Mapping) and p.get("type") == "text"]
            if len(texts) != len(content):
                raise _BadRequest(
                    f"messages[{i}]: only text content parts are supported", param=f"messages[{i}]"
                )
            messages[i] = {**m, "content": "".join(texts)}
    n = body.get("n", 1)
    if n not in (1, None):
        raise _BadRequest("only n=1 is supported", param="n")
    if body.get("stop") not in (None, [], ""):
        raise _BadRequest("'stop' sequences are not supported by this server", param="stop")
    if body.get("logprobs"):
        raise _BadRequest("'logprobs' are not supported by this server", param="logprobs")
    fmt = body.get("response_format")
    if isinstance(fmt, Mapping) and fmt.get("type") not in (None, "text"):
        raise _BadRequest(
            "only response_format {'type': 'text'} is supported; constrain output with tools",
            param="response_format",
        )
    tools = body.get("tools")
    if tools is not None and (not isinstance(tools, list) or not all(_is_tool(t) for t in tools)):
        raise _BadRequest(
            "'tools' must be an array of {'type': 'function', 'function': {'name': ..., 'parameters': ...}}",
            param="tools",
        )
    try:  # read once here: a choice the tools cannot keep is a 400 before any generation
        choice = parse_tool_choice(body.get("tool_choice"), [t["function"]["name"] for t in tools or ()])
    except UsageError as exc:
        raise _BadRequest(str(exc), param="tool_choice", code="invalid_request") from exc
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    if max_tokens is None:
        max_tokens = DEFAULT_MAX_TOKENS
    if (
        not isinstance(max_tokens, int)
        or isinstance(max_tokens, bool)
        or not 1 <= max_tokens <= MAX_TOKENS_CAP
    ):
        raise _BadRequest(f"max_tokens must be an integer from 1 to {MAX_TOKENS_CAP}", param="max_tokens")
    temperature = _number(body, "temperature", 1.0, 0.0, 2.0)
    top_p = _number(body, "top_p", 1.0, 0.0, 1.0)
    seed = body.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise _BadRequest("'seed' must be an integer", param="seed")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise _BadRequest("'stream' must be a boolean", param="stream")
    options = body.get("stream_options") or {}
    return {
        "messages": [dict(m) for m in messages],
        "tools": tools or None,
        "tool_choice": choice,
        "parallel_tool_calls": bool(body.get("parallel_tool_calls", False)),
        "max_new_tokens": max_tokens,
        "temperature": temperature,
        "top_p": top_p,
        "seed": seed,
        "stream": stream,
        "include_usage": bool(isinstance(options, Mapping) and options.get("include_usage")),
    }


def _is_tool(tool: Any) -> bool:
    fn = tool.get("function") if isinstance(tool, Mapping) else None
    return (
        isinstance(fn, Mapping)
        and tool.get("type", "function") == "function"
        and isinstance(fn.get("name"), str)
        and isinstance(fn.get("parameters", {}), Mapping)
    )


def _number(body: Mapping[str, Any], key: str, default: float, low: float, high: float) -> float:
    value = body.get(key)
    if value is None:
        return default
    if not isinstance(value, int | float) or isinstance(value, bool) or not low <= value <= high:
        raise _BadRequest(f"'{key}' must be a number from {low:g} to {high:g}", param=key)
    return float(value)


def _classify(exc: BaseException) -> tuple[int, dict[str, Any]]:
    if isinstance(exc, _BadRequest):
        return 400, error_body(str(exc), status=400, param=exc.param, code=exc.code or "invalid_request")
    if isinstance(exc, _CLIENT_ERRORS):
        return 400, error_body(str(exc), status=400, code=exception_code(exc))
    return 500, error_body(f"{type(exc).__name__}: {exc}", status=500, code="server_error")


# -- the app ------------------------------------------------------------------------------------------------


class _Server:
    """State shared by the routes: the generator, its lock and its name."""

    def __init__(
        self, generator: LocalGenerator, model_name: str, log_format: LogFormat = "logfmt",
        log_arguments: bool = False,
    ) -> None:
        self.generator = generator
        self.model_name = model_name
        self.lock = asyncio.Lock()
        self.created = int(time.time())
        self.log_format: LogFormat = log_format
        self.log_arguments = log_arguments

    def _finish(self, result: dict[str, Any], started: float) -> dict[str, Any]:
        """Name the model; at the end of a turn, log the decision (one line) and, on a stream's finishing
        chunk, add it to the delta as ``toolguard`` (as the proxy and the vLLM door do)."""
        result["model"] = self.model_name
        choices: list[dict[str, Any]] = result.get("choices") or []
        finish = choices[0].get("finish_reason") if choices else None
        if finish:
            decision = _serve_decision(finish, time.monotonic() - started)
            log_decision(log, decision, self.log_format, arguments=self.log_arguments)
            delta = choices[0].get("delta")
            if isinstance(delta, dict):
                delta["toolguard"] = decision.summary()
        return result

    async def generate(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        kwargs = {k: v for k, v in kwargs.items() if k not in ("stream", "include_usage")}
        messages = kwargs.pop("messages")
        started = time.monotonic()
        async with self.lock:
            work = asyncio.ensure_future(asyncio.to_thread(self.generator.chat, messages, **kwargs))
            try:
                result = await asyncio.shield(work)
            except asyncio.CancelledError:  # the client left: keep the lock until the model is free again
                await asyncio.wait([work])
                raise
        return self._finish(result, started)

    async def stream(self, kwargs: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        """Chunks of one streamed generation. The first ``__anext__`` raises request errors (before any byte
        is sent); closing the iterator stops the worker after its current token."""
        kwargs = dict(kwargs)
        kwargs.pop("stream")
        messages = kwargs.pop("messages")
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        stop = threading.Event()
        started = time.monotonic()

        def work() -> None:
            try:
                for chunk in self.generator.chat(messages, stream=True, **kwargs):
                    loop.call_soon_threadsafe(queue.put_nowait, ("chunk", chunk))
                    if stop.is_set():
                        break
            except BaseException as exc:  # handed to the event loop, raised there
                loop.call_soon_threadsafe(queue.put_nowait, ("error", exc))
            finally:
                loop.call_soon_threadsafe(queue.put_nowait, ("end", None))

        async with self.lock:
            thread = threading.Thread(target=work, name="toolguard-serve-generate", daemon=True)
            thread.start()
            try:
                while True:
                    kind, item = await queue.get()
                    if kind == "end":
                        return
                    if kind == "error":
                        raise item
                    yield self._finish(item, started)
            finally:
                stop.set()
                await asyncio.to_thread(thread.join)


def create_serve_app(
    generator: LocalGenerator,
    *,
    model_name: str | None = None,
    log_format: LogFormat = "logfmt",
    log_arguments: bool = False,
) -> Starlette:
    """The ASGI app of ``toolguard serve`` over ``generator`` (see the module docstring)."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route

    server = _Server(generator, model_name or generator.model_name, log_format, log_arguments)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "model": server.model_name, "busy": server.lock.locked()})

    def model_card() -> dict[str, Any]:
        return {
            "id": server.model_name,
            "object": "model",
            "created": server.created,
            "owned_by": "toolguard",
        }

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [model_card()]})

    async def model(request: Request) -> Response:
        if request.path_params["model_id"] != server.model_name:
            return JSONResponse(
                error_body(
                    f"model {request.path_params['model_id']!r} not found; this server "
                    f"serves {server.model_name!r}",
                    status=404,
                    code="model_not_found",
                ),
                404,
            )
        return JSONResponse(model_card())

    async def chat_completions(request: Request) -> Response:
        raw = await request.body()
        try:
            if len(raw) > MAX_BODY_BYTES:
                raise _BadRequest(f"the request body is larger than {MAX_BODY_BYTES} bytes")
            try:
                body = json.loads(raw)
            except ValueError as exc:
                raise _BadRequest(f"the request body is not JSON: {exc}") from exc
            kwargs = _chat_kwargs(body)
            if not kwargs["stream"]:
                return JSONResponse(await server.generate(kwargs))
            chunks = server.stream(kwargs)
            # The role chunk comes before the grammar is built: read one more, so a request error (an unknown
            # tool, a keyword the engine refuses) is still a 400 and not an error event inside a 200 stream.
            first = [await chunks.__anext__()]
            with contextlib.suppress(StopAsyncIteration):
                first.append(await chunks.__anext__())
        except Exception as exc:
            status, payload = _classify(exc)
            return JSONResponse(payload, status)

        async def events() -> AsyncIterator[str]:
            try:
                for chunk in first:
                    yield _sse(chunk)
                async for chunk in chunks:
                    yield _sse(chunk)
            except Exception as exc:
                yield _sse(_classify(exc)[1])
            finally:
                await chunks.aclose()
            yield "data: [DONE]\n\n"

        return StreamingResponse(
            events(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    return Starlette(
        routes=[
            Route("/health", health),
            Route("/healthz", health),
            Route("/v1/models", models),
            Route("/v1/models/{model_id:path}", model),
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        ]
    )


#: (action, verdict) of a local turn by its finish reason: the grammar made the calls valid, the Guard-side
#: checks cut a loop (``repetition``) or withheld a call cut by the token limit (``length``).
_FINISHES: dict[str, tuple[Action, str]] = {
    "stop": ("released", "ok"),
    "tool_calls": ("released", "ok"),
    "repetition": ("cut", "runaway"),
    "length": ("withheld", "truncated"),
}


def _serve_decision(finish: str, latency: float) -> Decision:
    action, verdict = _FINISHES.get(finish, ("released", "ok"))
    return Decision(action, verdict, "serve", latency=latency, detail={"finish_reason": finish})


def _sse(payload: Mapping[str, Any]) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"


def model_id(model: str | Path | None) -> str:
    """The id ``/v1/models`` lists for ``model``: ``toolguard-demo`` for the embedded model,
    ``SmolLM2-135M-Instruct`` for ``"smollm2"``, else the file's stem or the folder's name."""
    from ._load import SMOLLM2_NAME

    if model is None:
        return "toolguard-demo"
    if str(model).lower() == SMOLLM2_NAME:
        return "SmolLM2-135M-Instruct"
    path = Path(model)
    return path.stem if path.suffix.lower() == ".gguf" else path.name


def serve(
    *,
    model: str | Path | None = None,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    engine: str | None = None,
    model_name: str | None = None,
    threads: int | None = None,
    log_level: str = "info",
    log_format: LogFormat = "logfmt",
    unenforced: Unenforced = "check",
    progress: Callable[[str], None] | None = None,
) -> None:
    """Load ``model`` (default: the embedded demo model; a folder, a GGUF file or ``"smollm2"``) and serve it
    on ``host:port`` until interrupted. ``unenforced="check"`` serves tools whose schemas use keywords the
    grammar cannot enforce (``uniqueItems``) and checks those after decoding; ``"error"`` refuses them."""
    import uvicorn

    from ._generator import LocalGenerator
    from ._load import load_model
    from ._processor import DEFAULT_ENGINE

    loaded, tokenizer = load_model(model, threads=threads, progress=progress)
    name = model_name or model_id(model)
    generator = LocalGenerator(
        loaded, tokenizer, engine=engine or DEFAULT_ENGINE, model_name=name, unenforced=unenforced
    )
    app = create_serve_app(generator, model_name=name, log_format=log_format)
    _decision_logging(log_level, log_format)
    uvicorn.run(app, host=host, port=port, log_level=log_level)


def _decision_logging(level: str, log_format: LogFormat) -> None:
    """Decision lines of ``toolguard.serve`` on stderr beside uvicorn's (bare JSON objects with ``json``)."""
    handler = logging.StreamHandler()
    plain = "%(asctime)s %(levelname)s %(name)s %(message)s"
    handler.setFormatter(logging.Formatter("%(message)s" if log_format == "json" else plain))
    log.addHandler(handler)
    log.setLevel(level.upper())
