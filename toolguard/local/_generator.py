"""``LocalGenerator``: an OpenAI-shaped chat endpoint over a local transformers model, with guarded calls.

Its own decoding loop (batch 1, KV cache) runs the turn automaton of ``_turn`` and adds what ``generate()``
cannot do:

- **jump-forward**: after each sampled token, the tokens the grammar forces (framing, braces, property names,
  a const tool name) are appended at once and fed to the model together in the next pass, so each of them
  saves a forward pass (``stats.tokens_forced`` = passes saved); a turn whose remainder is forced (the closing
  ``\\n</tool_call>``) ends without sampling the end token;
- **one judge**: each step's bytes become the events every door feeds its ``Guard`` (``_turn_events``:
  free text, then each call's name and argument fragments, each byte decoded once); the grammar stays the
  first line of defence, the Guard judges runaways (in the text or inside an argument: decoding stops),
  truncation and the calls, and the release gate (``toolguard._release``) decides what a stream shows;
- **truthful endings**: ``finish_reason`` is ``"tool_calls"`` only for a turn whose calls all closed,
  ``"length"`` when ``max_new_tokens`` cut it (an open call is reported under ``toolguard.truncated`` and
  ``toolguard.truncated_call``, never as a tool call), ``"repetition"`` when the Guard found a loop,
  ``"stop"`` otherwise;
- **streaming** (``chat_stream`` or ``chat(stream=True)``): OpenAI ``chat.completion.chunk`` dicts of what the
  gate releases. Content streams as it is decoded, holding back only what may be the start of a call marker.
  Tool calls are held until the turn ends well (``stream_calls="hold"``, the default: a truncated or looping
  call is never shown), or streamed as they are written (``"pass"``: name with the first argument fragment,
  then the fragments; linear in the turn's length).

Cost per token: one model pass (fewer with jump-forward), the engine's mask (computed beside the forward pass
with ``overlap``), ``_mask.apply_mask`` and the Guard's linear work on the step's new bytes. The final
message is parsed by ``toolguard.formats.parse``.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from .._choice import parse_tool_choice
from .._events import ContentDelta, Finish, TokenDelta
from .._exceptions import UsageError
from .._guard import Guard
from .._openai import pieces_chunk
from .._release import ReleaseGate, coalesce
from .._runaway import RunawayDetector
from ..formats import parse
from ._compile import DEFAULT_COMPILE_TIMEOUT
from ._mask import apply_mask
from ._overlap import StepAhead
from ._processor import (
    DEFAULT_ENGINE,
    DEFAULT_OVERLAP,
    DEFAULT_SEPARATORS,
    Unenforced,
    as_toolset,
    build_turn_grammar,
)
from ._prompt import render_prompt
from ._turn import TurnGrammar, TurnState
from ._turn_events import TurnEvents, call_prefix, name_of
from ._vocab import end_token_ids

__all__ = ["DEFAULT_MAX_NEW_TOKENS", "GeneratorStats", "LocalGenerator"]

DEFAULT_MAX_NEW_TOKENS = 512
FinishReason = Literal["stop", "tool_calls", "length", "repetition"]
_PARSE_FORMAT = {"hermes": "hermes", "json": "openai"}


@dataclass(slots=True)
class GeneratorStats:
    """Counters over a generator's life (``LocalGenerator.stats``) or a request (``result["toolguard"]``)."""

    requests: int = 0
    forward_passes: int = 0
    tokens_generated: int = 0
    tokens_forced: int = 0  # appended by jump-forward, each one a forward pass saved
    tokens_masked: int = 0  # sampled under a grammar mask
    mask_seconds: float = 0.0
    forward_seconds: float = 0.0

    def add(self, other: GeneratorStats) -> None:
        for name in self.__slots__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(slots=True)
class _Run:
    """What one request produced (filled by ``_decode``)."""

    state: TurnState
    prompt_tokens: int
    grammar: TurnGrammar
    stats: GeneratorStats = field(default_factory=GeneratorStats)
    finish: FinishReason = "stop"
    runaway: Any = None
    tokens: list[int] = field(default_factory=list)
    guard: Any = None  # the Guard judging the turn
    turn: Any = None  # its TurnEvents (the call ids)
    events: list[Any] = field(default_factory=list)  # this step's (event, verdict) pairs


class LocalGenerator:
    """Chat completions from a local ``model`` and ``tokenizer`` with grammar-enforced tool calls.

    ``engine``/``format``/``max_string_length``/``close_objects``/``compile_timeout`` are as for
    ``ToolCallLogitsProcessor``, and so is ``unenforced`` (with ``"check"``, calls breaking a keyword the
    grammar could not enforce are listed under ``toolguard.invalid``). ``end_token_ids`` defaults to every eos
    id the tokenizer, the model config and its generation config declare. ``runaway`` builds the per-request
    ``RunawayDetector`` (None disables it). ``overlap`` computes each step's engine mask on a worker thread
    while the model runs its forward pass (``_overlap``; None, the default: when the model is on an
    accelerator).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        engine: str = DEFAULT_ENGINE,
        format: str = "hermes",
        max_string_length: int | None = None,
        close_objects: bool = True,
        separators: tuple[str, str] = DEFAULT_SEPARATORS,
        compile_timeout: float | None = DEFAULT_COMPILE_TIMEOUT,
        end_token_ids: Sequence[int] | None = None,
        runaway: Callable[[], RunawayDetector] | None = RunawayDetector,
        model_name: str | None = None,
        unenforced: Unenforced = "error",
        overlap: bool | None = DEFAULT_OVERLAP,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.engine = engine
        self.format = format
        self.max_string_length = max_string_length
        self.close_objects = close_objects
        self.separators = separators
        self.compile_timeout = compile_timeout
        self.unenforced: Unenforced = unenforced
        self.end_token_ids = tuple(end_token_ids) if end_token_ids else end_token_ids_of(tokenizer, model)
        self.runaway = runaway
        path = getattr(getattr(model, "config", None), "_name_or_path", "")
        self.model_name = model_name or str(path or "local")
        self.stats = GeneratorStats()
        self.overlap = overlap
        self._ahead = StepAhead()

    # ---- public API --------------------------------------------------------------------------------------
    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Any = None,
        tool_choice: Any = "auto",
        parallel_tool_calls: bool = False,
        max_calls: int | None = None,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        temperature: float = 1.0,
        top_p: float = 1.0,
        seed: int | None = None,
        stream: bool = False,
        stream_calls: Literal["hold", "pass"] = "hold",
        include_usage: bool = False,
        logits_processors: Sequence[Any] = (),
    ) -> Any:
        """One assistant turn as an OpenAI ``chat.completion`` dict (or, with ``stream=True``, an iterator of
        ``chat.completion.chunk`` dicts, as ``chat_stream``). ``result["toolguard"]`` carries the stats, an
        open call cut by the length limit (``truncated``), the runaway found, and parse notes."""
        kwargs = dict(tools=tools, tool_choice=tool_choice, parallel_tool_calls=parallel_tool_calls,
                      max_calls=max_calls, max_new_tokens=max_new_tokens, temperature=temperature,
                      top_p=top_p, seed=seed, logits_processors=logits_processors)
        if stream:
            return self.chat_stream(messages, stream_calls=stream_calls, include_usage=include_usage,
                                    **kwargs)
        steps = self._decode(messages, **kwargs)
        run = _drain(steps)
        return _completion(self, run, seed)

    def chat_stream(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        stream_calls: Literal["hold", "pass"] = "hold",
        include_usage: bool = False,
        seed: int | None = None,
        **kwargs: Any,
    ) -> Iterator[dict[str, Any]]:
        """The streaming twin of ``chat`` (same keyword arguments): ``chat.completion.chunk`` dicts, see the
        module docstring."""
        if stream_calls not in ("hold", "pass"):
            raise UsageError(f"stream_calls must be 'hold' or 'pass', not {stream_calls!r}")
        steps = self._decode(messages, seed=seed, **kwargs)
        return _Streamer(self, steps, stream_calls, include_usage, seed).chunks()

    # ---- decoding ----------------------------------------------------------------------------------------
    def prompt_ids(self, messages: Sequence[Mapping[str, Any]], tools: Any = None) -> list[int]:
        """The prompt for ``messages``: the tokenizer's chat template, with the tools rendered into the system
        message when the template ignores them (``_prompt.render_prompt``)."""
        openai_tools = as_toolset(tools).to_openai() if tools is not None else None
        return render_prompt(self.tokenizer, messages, openai_tools or None)

    def _decode(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Any = None,
        tool_choice: Any = "auto",
        parallel_tool_calls: bool = False,
        max_calls: int | None = None,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        temperature: float = 1.0,
        top_p: float = 1.0,
        seed: int | None = None,
        logits_processors: Sequence[Any] = (),
    ) -> Iterator[tuple[list[int], _Run]]:
        """Yields ``(new tokens, run)`` after each model pass; the last yield has ``run.finish`` set."""
        import torch

        if max_new_tokens < 1:
            raise UsageError("max_new_tokens must be at least 1")
        if tools is None:  # "auto"/"none" read as none; a required or named call without tools: UsageError
            tool_choice = parse_tool_choice(tool_choice, ())
        grammar = build_turn_grammar(
            self.tokenizer, tools, tool_choice, engine=self.engine,
            format=self.format, parallel_tool_calls=parallel_tool_calls, max_calls=max_calls,
            end_ids=self.end_token_ids,
            max_string_length=self.max_string_length, close_objects=self.close_objects,
            separators=self.separators, compile_timeout=self.compile_timeout, unenforced=self.unenforced,
        )
        prompt = self.prompt_ids(messages, tools)
        state = grammar.new_state()
        run = _Run(state, len(prompt), grammar)
        stats = run.stats
        stats.requests = 1
        gen = torch.Generator(device="cpu")
        gen.manual_seed(seed if seed is not None else random.getrandbits(63))
        device = getattr(self.model, "device", torch.device("cpu"))
        total = len(prompt) + max_new_tokens
        ids = torch.zeros((1, total), dtype=torch.long)
        ids[0, : len(prompt)] = torch.tensor(prompt)
        length = len(prompt)
        rng = _ids_rng(seed)
        run.turn = turn = TurnEvents(self.separators, lambda: _call_id(rng))
        # _NoRunaway has the one method the Guard calls (push): a detector in all but name
        detector = cast("Callable[[], RunawayDetector]", self.runaway or _NoRunaway)
        run.guard = guard = Guard(grammar.toolset, tool_choice=tool_choice, detector=detector)
        n_vocab = grammar.n_vocab
        ends = set(grammar.end_ids)
        pending = prompt
        cache_arg = _cache_argument(self.model)
        past = None
        # the next step's mask is computed on a worker while the model runs its forward pass (``_overlap``)
        on_cpu = getattr(device, "type", "cpu") == "cpu"
        ahead = self._ahead if self.overlap or (self.overlap is None and not on_cpu) else None
        upcoming = None
        try:
            while True:
                if ahead is not None and state.engine_matcher is not None:  # other masks are lookups
                    upcoming = ahead.submit(state.fill_engine_mask)
                t0 = time.perf_counter()
                with torch.inference_mode():
                    out = self.model(input_ids=torch.tensor([pending], device=device), use_cache=True,
                                     **{cache_arg: past})
                past = out[cache_arg] if cache_arg in out else getattr(out, "past_key_values", None)
                logits = out.logits[0, -1].float().cpu().contiguous()
                stats.forward_passes += 1
                t1 = time.perf_counter()
                stats.forward_seconds += t1 - t0
                if logits_processors:
                    with torch.inference_mode():  # the logits are an inference tensor
                        for proc in logits_processors:
                            logits = proc(ids[:, :length], logits[None])[0]
                if upcoming is not None:
                    StepAhead.wait(upcoming)
                    upcoming = None
                    mask = state.mask(filled=True)
                else:
                    mask = state.mask()
                stats.tokens_masked += mask.kind != "all"
                if mask.kind == "single":  # nothing to sample
                    token = mask.token
                    t2 = time.perf_counter()
                else:
                    apply_mask(logits, mask, n_vocab)
                    t2 = time.perf_counter()
                    token = _sample(logits, temperature, top_p, gen)
                t3 = time.perf_counter()
                state.advance(token)
                new = [token]
                if token not in ends and state.phase not in ("done", "error"):
                    budget = max_new_tokens - (length - len(prompt)) - 1
                    while budget > 0:
                        forced = state.forced()[:budget]
                        if not forced:
                            break
                        for f in forced:
                            state.advance(f, forced=True)
                        new += forced
                        budget -= len(forced)
                        stats.tokens_forced += len(forced)
                stats.mask_seconds += (t2 - t1) + (time.perf_counter() - t3)
                ids[0, length : length + len(new)] = torch.tensor(new)
                length += len(new)
                run.tokens += new
                stats.tokens_generated += len(new)
                run.events = _judge(guard, turn.step(state), token)
                if guard.verdict.kind == "runaway":
                    run.runaway = guard.verdict.runaway
                    run.finish = "repetition"
                elif token in ends or state.finished:
                    run.finish = "tool_calls" if state.call_spans else "stop"
                elif state.phase == "error":  # pragma: no cover - the mask makes this unreachable
                    raise UsageError(f"the turn automaton rejected a sampled token: {state.error}")
                elif length - len(prompt) >= max_new_tokens:
                    run.finish = "length"
                else:
                    yield new, run
                    pending = new
                    continue
                if run.finish != "repetition":
                    run.events += _judge(guard, turn.step(state, final=True), None)
                guard.feed(Finish(run.finish))
                yield new, run
                return
        finally:
            if upcoming is not None:  # the caller stopped early: let the worker finish with the state
                upcoming.result()
            self.stats.add(stats)


def _cache_argument(model: Any) -> str:
    """transformers 5.x names the KV cache ``cache``; earlier versions ``past_key_values``."""
    import inspect

    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):  # pragma: no cover
        return "past_key_values"
    return "cache" if "cache" in params else "past_key_values"


def end_token_ids_of(tokenizer: Any, model: Any) -> tuple[int, ...]:
    return end_token_ids(tokenizer, model)


def _drain(steps: Iterator[tuple[list[int], _Run]]) -> _Run:
    last = None
    for _, last in steps:  # noqa: B007 - only the final state matters
        pass
    assert last is not None
    return last


def _sample(logits: Any, temperature: float, top_p: float, gen: Any) -> int:
    import torch

    if temperature <= 0:
        return int(torch.argmax(logits).item())
    probs = torch.softmax(logits / temperature, dim=-1)
    if top_p < 1.0:
        sorted_probs, order = torch.sort(probs, descending=True)
        keep = torch.cumsum(sorted_probs, dim=-1) - sorted_probs < top_p
        sorted_probs = sorted_probs * keep
        choice = torch.multinomial(sorted_probs, 1, generator=gen)
        return int(order[choice].item())
    return int(torch.multinomial(probs, 1, generator=gen).item())


def _judge(guard: Guard, events: list[Any], token: int | None) -> list[tuple[Any, Any]]:
    """Feed ``events`` to ``guard`` (stopping at a failing verdict); return each with its verdict. Free text
    goes in as the ``TokenDelta`` of the step's sampled ``token``, so the Guard's token rules (a token
    repeated, whatever its text) see the ids as well as the text."""
    out = []
    for event in events:
        fed = TokenDelta(token, event.text) if type(event) is ContentDelta else event
        verdict = guard.feed(fed)
        out.append((event, verdict))
        if verdict.failed:
            break
    return out


class _NoRunaway:
    """The detector of a generator built with ``runaway=None``: it never finds a loop."""

    def push(self, text: str, token_id: int | None = None) -> None:
        return None


def _call_id(rng: random.Random) -> str:
    return "call_" + "".join(rng.choice("0123456789abcdefghijklmnopqrstuvwxyz") for _ in range(24))


def _ids_rng(seed: int | None) -> random.Random:
    return random.Random(seed if seed is not None else uuid.uuid4().int)


class _Message:
    """The final message of a run: content and calls (from ``formats.parse``), extras for ``toolguard``."""

    def __init__(self, gen: LocalGenerator, run: _Run, seed: int | None) -> None:
        state = run.state
        text = state.buf.decode("utf-8", errors="replace")
        parsed = parse(text, format=_PARSE_FORMAT.get(gen.format, "auto"))  # type: ignore[arg-type]
        self.finish: FinishReason = run.finish
        self.content = state.content_bytes().decode("utf-8", errors="replace")
        self.calls: list[dict[str, Any]] = []
        self.truncated = ""
        notes = list(parsed.notes)
        # The arguments are the exact text the model wrote (the parser re-serialises numbers and escapes);
        # the parser cross-checks the names and the count.
        raw = [_split_call(b.decode("utf-8", errors="replace"), gen.separators) for b in state.calls_bytes()]
        if [name for name, _ in raw] != [c.name for c in parsed.tool_calls]:
            notes.append(f"parser found calls {[c.name for c in parsed.tool_calls]}, the grammar closed "
                         f"{[name for name, _ in raw]}")
        if run.finish == "tool_calls":
            self.calls = [
                {"id": id, "type": "function", "function": {"name": name, "arguments": args}}
                for id, (name, args) in zip(run.turn.call_ids, raw, strict=True)
            ]
        elif state.call_spans or state.content_end is not None:
            self.truncated = bytes(state.buf[state.content_end or 0:]).decode("utf-8", errors="replace")
        invalid = _check_unenforced(run.grammar, raw) if run.grammar.unenforced else []
        if run.runaway is not None and state.content_end is None:
            keep = run.runaway.offset + run.runaway.period
            self.content = self.content[:keep]
        open_call = run.turn.open_call() if self.truncated else None
        self.extras = {
            "engine": gen.engine,
            "stats": run.stats.as_dict(),
            "truncated": self.truncated,
            "truncated_call": (
                None if open_call is None else {"name": open_call[0], "arguments": open_call[1]}
            ),
            "runaway": None if run.runaway is None else {
                "kind": run.runaway.kind, "unit": run.runaway.unit, "period": run.runaway.period,
                "copies": run.runaway.copies, "offset": run.runaway.offset},
            "notes": notes,
            "unenforced": dict(run.grammar.unenforced),
            "uncallable": dict(run.grammar.uncallable),
            "invalid": invalid,
        }

    def message(self) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": self.content or (None if self.calls else "")}
        if self.calls:
            msg["tool_calls"] = self.calls
        return msg


def _check_unenforced(grammar: TurnGrammar, calls: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """Validate calls against the full schemas when the grammar left keywords out (``unenforced="check"``)."""
    from .._stream import StreamValidator

    out = []
    for i, (name, arguments) in enumerate(calls):
        tool = grammar.toolset.get(name) if grammar.toolset is not None else None
        if tool is None or name not in grammar.unenforced:
            continue
        validator = StreamValidator(tool.parameters)
        validator.feed(arguments)
        verdict = validator.close()
        if verdict.state != "complete":
            err = verdict.error
            out.append({"index": i, "name": name, "path": getattr(err, "path", ""),
                        "message": getattr(err, "message", str(err))})
    return out


def _usage(run: _Run) -> dict[str, int]:
    done = len(run.tokens)
    total = run.prompt_tokens + done
    return {"prompt_tokens": run.prompt_tokens, "completion_tokens": done, "total_tokens": total}


def _completion_id() -> str:
    return "chatcmpl-" + uuid.uuid4().hex[:24]


def _completion(gen: LocalGenerator, run: _Run, seed: int | None) -> dict[str, Any]:
    msg = _Message(gen, run, seed)
    return {
        "id": _completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": gen.model_name,
        "choices": [{"index": 0, "message": msg.message(), "finish_reason": msg.finish, "logprobs": None}],
        "usage": _usage(run),
        "toolguard": msg.extras,
    }


class _Streamer:
    """Turns decoding steps into ``chat.completion.chunk`` dicts of what the release gate lets out."""

    def __init__(self, gen: LocalGenerator, steps: Iterator[tuple[list[int], _Run]], stream_calls: str,
                 include_usage: bool, seed: int | None) -> None:
        self.gen = gen
        self.steps = steps
        self.gate = ReleaseGate(stream_calls)  # type: ignore[arg-type]
        self.include_usage = include_usage
        self.seed = seed
        self.head = {"id": _completion_id(), "object": "chat.completion.chunk", "created": int(time.time()),
                     "model": gen.model_name}

    def chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return {**self.head, "choices": [choice], **extra}

    def chunks(self) -> Iterator[dict[str, Any]]:
        yield self.chunk({"role": "assistant", "content": ""})
        gate = self.gate
        run = None
        for _, run in self.steps:
            if run.guard is not None and not gate.began:
                gate.begin(run.guard)
            for event, verdict in run.events:
                for piece in gate.feed(event, verdict):
                    yield pieces_chunk(self.head, [piece])
        assert run is not None
        msg = _Message(self.gen, run, self.seed)
        if run.guard.verdict.usable:
            for piece in coalesce(gate.accept()):
                yield pieces_chunk(self.head, [piece])
        yield self.chunk({}, msg.finish, toolguard=msg.extras)
        if self.include_usage:
            yield {**self.head, "choices": [], "usage": _usage(run)}


def _split_call(text: str, separators: tuple[str, str]) -> tuple[str, str]:
    """``(name, arguments text)`` of a closed call object written in the grammar's layout."""
    name = name_of(text, separators)
    if name is None:  # pragma: no cover - the grammar only closes calls in this layout
        raise ValueError(f"not a call object: {text[:80]!r}")
    return name, text[len(call_prefix(name, separators)) : -1]
