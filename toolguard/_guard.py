"""``Guard``: the sans-IO core every front door shares (local decoding, the SDK wrapper, the proxy).

Theory of operation
-------------------
One ``Guard`` watches one generation. The front door translates what it reads into event values
(``ContentDelta``, ``ToolCallDelta``, ``TokenDelta``, ``Finish``; see ``toolguard._events``) and calls
``guard.feed(event)``; each call returns a ``GuardVerdict`` saying whether the generation may go on. The
Guard does no I/O, reads no clock, starts no thread and imports no asyncio: the front door turns verdicts
into actions (``local/`` masks logits and stops, ``sdk/`` closes the upstream stream and re-asks,
``proxy/`` ends the SSE stream). The checks, each living only here:

- **Arguments** (``"rejected"``): a ``StreamValidator`` per tool call, built from the schema of the tool
  the call names, rejects at the first character no completion can save. At the end every call must be a
  complete document (``Finish`` closes the validators).
- **Names** (``"unknown_tool"``): a name no tool has (or one ``tool_choice`` forbids) is a violation as
  soon as it cannot be the prefix of an allowed name, i.e. at once for whole names as OpenAI streams them.
- **Runaways** (``"runaway"``): a ``RunawayDetector`` over the content, one over each call's arguments,
  and one over raw tokens (``TokenDelta``).
- **Termination**: text after a tool call is ``"fabricated"`` (cut, the calls stay usable); a call still
  open when the generation stops for ``"length"`` is ``"truncated"`` (never a tool call); a call written
  into the content (``<tool_call>{...``, ``[TOOL_CALLS]``, a bare ``{"name": "known_tool", ...`` object)
  is ``"call_in_content"``; with ``tool_choice`` ``"required"`` or a named tool, ending without a call is
  ``"missing_call"``.
- **Repair** (``repair=True``; the re-ask flow turns it on from ``Policy.repair_calls``): a call written into
  the content is not failed at once. The text from its marker (or from the start, for a bare JSON call) is
  handed to a ``toolguard.formats.StreamingParser`` in ``call_format`` (``"auto"`` detects it); the calls it
  parses are checked like ``ToolCallDelta`` ones and become the message's tool calls (``repaired`` is True),
  the prose before stays content and the text after is cut as fabricated. Only when nothing parses as a call
  is the verdict ``"call_in_content"``; a call that parses but breaks its schema is ``"rejected"``.

Verdicts are data, never exceptions. The first failing verdict is sticky: every later ``feed`` returns it
unchanged and does no work. ``"fabricated"`` is sticky too but *usable*: the calls made before the text
stand. ``Finish`` or ``close()`` returns the final verdict (``done=True``); feeding after either raises
``UsageError`` (as h11 raises on data after EOF). ``close()`` is idempotent.

Cost: O(1) amortised work per character beyond what the validator and detectors do (fragments are appended
to lists, never re-joined or re-parsed while streaming); the marker scan looks at each content delta plus a
fixed tail. Caps (number of calls, argument size) are named in ``GuardLimits``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._events import ContentDelta, Finish, GuardEvent, TokenDelta, ToolCallDelta
from ._exceptions import UsageError
from ._guard_state import GuardState, _Call
from ._openai import message_events
from ._runaway import FINISH_REASON_REPETITION
from ._verdict import (
    DONE_OK,
    OK,
    GuardLimits,
    GuardVerdict,
    VerdictKind,
    replace_done,
    runaway_message,
)

__all__ = ["Guard", "GuardLimits", "GuardVerdict", "VerdictKind"]


class Guard(GuardState):
    """One generation's guard. See the module docstring for the rules.

    ``tools``: the tools the request offered (a ``ToolSet`` or OpenAI ``tools`` JSON); ``None`` or empty means
    any tool call is an unknown tool. ``tool_choice``: the request's (``"auto"``, ``"none"``, ``"required"``,
    a name or ``{"type": "function", "function": {"name": ...}}``, read by ``toolguard._choice``; one the
    tools cannot keep raises ``UsageError``). ``detector``: a factory for ``RunawayDetector`` (defaults to
    ``RunawayDetector()``); ``limits``: the caps. ``format`` (``"hermes"``, ``"llama3"``, ``"mistral"``,
    ``"openai"``, ``"auto"``...): the wire format of raw model text fed as
    ``TokenDelta``; its calls are parsed (``toolguard.formats.StreamingParser``) and checked like
    ``ToolCallDelta`` ones. Without ``format``, ``TokenDelta`` text is content. ``repair`` (off by default;
    the re-ask flow turns it on from ``Policy.repair_calls``): a call written into the content is parsed in
    ``call_format`` (``"auto"``: detected) and checked as a call instead of failing as ``call_in_content``
    (``repaired`` then says so).

    Raises ``UsageError`` when fed after ``Finish`` or ``close()``, or with something that is not an event.
    """

    __slots__ = ()

    # ------------------------------------------------------------------------------------------------ feeding
    def feed(self, event: GuardEvent) -> GuardVerdict:
        """Consume one event; return the verdict on the generation so far (see the module docstring)."""
        if self.closed or self._finish_reason is not None:
            raise UsageError(
                "this Guard already finished (Finish or close()); start a new Guard per generation"
            )
        verdict = self._verdict
        kind = type(event)
        if verdict.kind != "ok":
            return self._on_finish(event.reason) if kind is Finish else verdict  # type: ignore[union-attr]
        if kind is ToolCallDelta:
            if self._repair_verdict is not None:  # calls both in the text and in tool_calls: ask again
                return self._fail(self._repair_verdict)
            return self._on_call(event)  # type: ignore[arg-type]
        if kind is ContentDelta:
            return self._on_content(event.text)  # type: ignore[union-attr]
        if kind is TokenDelta:
            return self._on_token(event)  # type: ignore[arg-type]
        if kind is Finish:
            return self._on_finish(event.reason)  # type: ignore[union-attr]
        raise UsageError(
            f"Guard.feed takes a ContentDelta, ToolCallDelta, TokenDelta or Finish, not {kind.__name__}"
        )

    def feed_message(self, message: Mapping[str, Any] | Any, finish_reason: str | None) -> GuardVerdict:
        """Feed a whole (non-streamed) assistant message, a dict or an SDK object, then ``Finish``.

        Returns the final verdict."""
        events = message_events(message, finish_reason)
        if len(events) > 2 and type(events[0]) is ContentDelta and type(events[1]) is ToolCallDelta:
            from ._repair import fabricated_split

            events = fabricated_split(events)  # a fake result beside the calls goes after them: it is cut
        for event in events:
            verdict = self.feed(event)
            if verdict.done:
                return verdict
        return self._verdict

    def close(self) -> GuardVerdict:
        """End the generation; return the final verdict. Without a prior ``Finish``, a call still open is
        ``"truncated"`` (the stream stopped inside it). Idempotent."""
        if self.closed:
            return self._verdict
        if self._finish_reason is None and self._verdict.kind == "ok":
            self._finalize(None)
        elif not self._verdict.done:
            self._verdict = replace_done(self._verdict)
        self.closed = True
        return self._verdict

    # ------------------------------------------------------------------------------------------------ rules
    def _fail(self, verdict: GuardVerdict) -> GuardVerdict:
        if self._repair_verdict is not None and not self._order and self._repair_text:
            self._content.extend(self._repair_text)  # no call repaired: the text is the turn's content again
            self._repair_text = []
        self._verdict = verdict
        return verdict

    def _on_content(self, text: str) -> GuardVerdict:
        if not text:
            return OK
        if self._repair_verdict is not None:  # repairing: the rest of the content goes to the format parser
            self._repair_text.append(text)
            self._repair_chars += len(text)
            if self._repair_xml is not None:
                return OK
            return self._on_parsed(self._parser.feed(text))
        if self._order:
            if not text.strip() and not self._fabricated:
                return OK
            return self._on_fabricated(text)
        offset = self._content_len
        self._content.append(text)
        self._content_len += len(text)
        # A call written into the content: a marker anywhere, or a bare JSON call at the start.
        found = self._scan.scan(text, offset)
        if found is not None:
            if self._repair is not None and self._parser is None:
                return self._start_repair(found)
            return self._fail(found)
        detector = self._content_detector
        if detector is None:
            detector = self._content_detector = self._detector_factory()
        runaway = detector.push(text)
        if runaway is not None:
            return self._fail(
                GuardVerdict(
                    "runaway",
                    True,
                    runaway_message("message text", runaway),
                    "content",
                    runaway=runaway,
                    offset=getattr(runaway, "offset", None),
                )
            )
        return OK

    def _start_repair(self, found: GuardVerdict) -> GuardVerdict:
        """Hand the content from the call's start on to a format parser (see ``repair``)."""
        from .formats import StreamingParser

        at = found.offset if found.tool is None and found.offset is not None else 0
        content = self.content
        before = content[:at]
        self._content = [before] if before else []
        self._content_len = len(before)
        self._parser = StreamingParser(self._repair)  # type: ignore[arg-type]
        self._parser_base = len(before)
        self._repair_verdict = found
        self._repair_text.append(content[at:])
        self._repair_chars += len(content) - at
        return self._on_parsed(self._parser.feed(content[at:]))

    def _on_fabricated(self, text: str) -> GuardVerdict:
        self._fabricated.append(text)
        for call in self._order:
            if not call.complete:
                return self._fail(
                    GuardVerdict(
                        "rejected",
                        True,
                        f"text interrupted the arguments of {call.name or 'a tool call'!r} before their end",
                        "arguments",
                        call_index=call.index,
                        tool=call.name or None,
                        offset=call.length,
                        text=text,
                    )
                )
        return self._fail(
            GuardVerdict(
                "fabricated",
                False,
                "text after the tool call(s) was cut: a model must not write what a tool returns",
                "content",
                text=text,
            )
        )

    def _on_call(self, event: ToolCallDelta) -> GuardVerdict:
        if self._fabricated:
            return self._verdict
        call = self._calls.get(event.index)
        if call is None:
            if len(self._order) >= self._limits.max_calls:
                return self._fail(
                    GuardVerdict(
                        "rejected",
                        True,
                        f"more than {self._limits.max_calls} tool calls in one generation",
                        "name",
                        call_index=event.index,
                    )
                )
            call = self._calls[event.index] = _Call(event.index)
            self._order.append(call)
        if event.id:
            call.id = event.id
        if event.name:
            if call.resolved:
                if event.name != call.name:
                    call.name += event.name
                    return self._unknown(call)
            else:
                call.name += event.name
                verdict = self._resolve(call, final=False)
                if verdict is not None:
                    return verdict
        text = event.arguments
        if not text:
            return OK
        if not call.resolved:
            verdict = self._resolve(call, final=True)
            if verdict is not None:
                return verdict
        offset = call.length
        call.fragments.append(text)
        call.length += len(text)
        if call.length > self._limits.max_argument_chars:
            return self._fail(
                GuardVerdict(
                    "rejected",
                    True,
                    f"the arguments of {call.name!r} exceed {self._limits.max_argument_chars} characters",
                    "arguments",
                    call_index=call.index,
                    tool=call.name,
                    offset=offset,
                )
            )
        result = call.validator.feed(text)
        state = result.state
        if state == "rejected":
            return self._fail(_rejection(call, result.error))
        call.complete = state == "complete"
        runaway = call.detector.push(text)
        if runaway is not None:
            return self._fail(
                GuardVerdict(
                    "runaway",
                    True,
                    runaway_message(f"arguments of {call.name!r}", runaway),
                    "arguments",
                    call_index=call.index,
                    tool=call.name,
                    offset=getattr(runaway, "offset", None),
                    runaway=runaway,
                )
            )
        return OK

    def _resolve(self, call: _Call, *, final: bool) -> GuardVerdict | None:
        """Match the call's name to a tool; ``final`` when no more of the name can arrive."""
        name = call.name
        if name in self._allowed:
            call.resolved = True
            call.tool = self._tools[name]
            call.validator = self._validator_factory(call.tool.parameters)
            call.detector = self._detector_factory()
            return None
        if final or not any(a.startswith(name) for a in self._allowed):
            return self._unknown(call)
        return None

    def _unknown(self, call: _Call) -> GuardVerdict:
        name = call.name
        if name in self._tools:
            message = (
                f"tool_choice does not allow calling {name!r}; allowed: {', '.join(sorted(self._allowed))}"
            )
        elif not self._allowed:
            message = f"no tool may be called here, but the model called {name!r}"
        else:
            message = f"there is no tool named {name!r}; available tools: {', '.join(sorted(self._allowed))}"
        return self._fail(
            GuardVerdict(
                "unknown_tool", True, message, "name", call_index=call.index, tool=name or None, text=name
            )
        )

    def _on_token(self, event: TokenDelta) -> GuardVerdict:
        detector = self._token_detector
        if detector is None:
            detector = self._token_detector = self._detector_factory()
        runaway = detector.push(event.text, event.token_id)
        if runaway is not None:
            return self._fail(
                GuardVerdict(
                    "runaway",
                    True,
                    runaway_message("generation", runaway),
                    "tokens",
                    runaway=runaway,
                    offset=getattr(runaway, "offset", None),
                )
            )
        if not event.text:
            return OK
        if self._parser is None:
            return self._on_content(event.text)
        return self._on_parsed(self._parser.feed(event.text))

    def _on_parsed(self, events: list[Any]) -> GuardVerdict:
        """Events of the format parser (raw ``TokenDelta`` text) turned into the Guard's own rules."""
        from .formats import ContentDelta as Prose
        from .formats import FabricationStarted, ProblemFound, ToolCallCompleted

        verdict = OK
        for event in events:
            if isinstance(event, Prose):
                verdict = self._on_prose(event.text)
            elif isinstance(event, ToolCallCompleted):
                call = event.call
                self._parsed_calls += 1
                self._repaired = self._repair_verdict is not None
                verdict = self._on_call(
                    ToolCallDelta(event.index, call.id, call.name, call.arguments or "{}")
                )
            elif isinstance(event, FabricationStarted):
                verdict = self._on_fabricated("")
            elif isinstance(event, ProblemFound) and event.problem.kind == "malformed":
                problem = event.problem
                malformed = GuardVerdict(
                    "rejected",
                    True,
                    f"malformed tool call: {problem.message}",
                    "arguments",
                    call_index=len(self._order),
                    offset=problem.offset,
                    text=problem.text,
                )
                if self._xml_repairable():
                    self._repair_xml = malformed  # Qwen3-Coder/GLM parameters: read whole at the end
                    return OK
                verdict = self._fail(malformed)
            if verdict.kind != "ok":
                return verdict
        return verdict

    def _on_prose(self, text: str) -> GuardVerdict:
        """Content the format parser vouched for: no marker scan, runaway detection only."""
        if not text:
            return OK
        self._content.append(text)
        self._content_len += len(text)
        return OK

    def _xml_repairable(self) -> bool:
        if self._repair_verdict is None or self._order:
            return False
        from ._repair import XML_SIGNS

        text = "".join(self._repair_text)
        return any(sign in text for sign in XML_SIGNS)

    def _finalize_xml(self, malformed: GuardVerdict) -> GuardVerdict | None:
        """The calls written as XML parameters (``toolguard._repair.xml_calls``), checked like any others."""
        from ._repair import xml_calls

        schemas = {t.name: t.parameters for t in self._tools}
        found = xml_calls("".join(self._repair_text), schemas)
        if found is None:
            return self._fail(malformed)
        calls, rest = found
        self._repaired = True
        for index, (name, arguments) in enumerate(calls):
            verdict = self._on_call(ToolCallDelta(index, None, name, arguments))
            if verdict.kind != "ok":
                return verdict
        if rest.strip():
            self._on_fabricated(rest)
        return None

    def _finalize_parser(self, reason: str | None) -> GuardVerdict | None:
        if self._repair_xml is not None:
            return self._finalize_xml(self._repair_xml)
        parsed = self._parser.close()
        fed = len(self.content) - self._parser_base
        if len(parsed.content) > fed:
            self._on_prose(parsed.content[fed:])
        for index, call in enumerate(parsed.tool_calls[self._parsed_calls :], start=self._parsed_calls):
            verdict = self._on_call(ToolCallDelta(index, call.id, call.name, call.arguments or "{}"))
            if verdict.kind != "ok":
                return verdict
        self._parsed_calls = len(parsed.tool_calls)
        if parsed.fabricated and self._verdict.kind == "ok":
            self._on_fabricated(parsed.fabricated)
        if not parsed.complete:
            kind: VerdictKind = "truncated" if reason in ("length", None) else "rejected"
            return self._fail(
                GuardVerdict(
                    kind,
                    True,
                    "the generation ended inside a tool call; a truncated call is not a tool call",
                    "finish",
                    call_index=len(self._order),
                    text=parsed.truncated,
                )
            )
        if self._repair_verdict is not None and not self._order:  # nothing in the text parsed as a call
            return self._fail(self._repair_verdict)
        return None

    def _on_finish(self, reason: str | None) -> GuardVerdict:
        self._finish_reason = reason or ""
        verdict = self._verdict
        if verdict.kind != "ok":
            self._verdict = replace_done(verdict)
            return self._verdict
        if reason == FINISH_REASON_REPETITION:  # the producer's own detector stopped a loop
            return self._fail(
                GuardVerdict("runaway", True, "the generation was stopped in a repetition loop", "finish")
            )
        return self._finalize(reason)

    def _finalize(self, reason: str | None) -> GuardVerdict:
        if self._parser is not None:
            failed = self._finalize_parser(reason)
            if failed is not None:
                return failed
            if self._verdict.kind == "fabricated":
                self._verdict = replace_done(self._verdict)
                return self._verdict
        cut = reason == "length" or reason is None
        for call in sorted(self._order, key=lambda c: c.index):
            if not call.resolved:
                if not call.name and cut:
                    return self._truncated(call, reason)
                if not call.name:
                    return self._fail(
                        GuardVerdict(
                            "rejected", True, "a tool call without a name", "name", call_index=call.index
                        )
                    )
                verdict = self._resolve(call, final=True)
                if verdict is not None:
                    return verdict
            result = call.validator.close()
            if result.state == "complete":
                continue
            if cut:
                return self._truncated(call, reason)
            return self._fail(_rejection(call, getattr(result, "error", None), incomplete=True))
        if not self._order:
            found = self._scan.at_end(self.content)
            if found is not None:
                if self._repair is not None and self._parser is None:
                    verdict = self._start_repair(found)
                    if verdict.kind == "ok":
                        return self._finalize(reason)
                    self._verdict = replace_done(verdict)
                    return self._verdict
                return self._fail(found)
            if self._required is not None:
                return self._fail(GuardVerdict("missing_call", True, self._required, "finish"))
        self._verdict = DONE_OK
        return self._verdict

    def _truncated(self, call: _Call, reason: str | None) -> GuardVerdict:
        cause = "the generation hit its token limit" if reason == "length" else "the stream stopped"
        what = f"{call.name!r}" if call.name else "a tool call"
        return self._fail(
            GuardVerdict(
                "truncated",
                True,
                f"{cause} inside the arguments of {what}; a truncated call is not a tool call",
                "finish",
                call_index=call.index,
                tool=call.name or None,
                offset=call.length,
                text="".join(call.fragments),
            )
        )


def _rejection(call: _Call, error: Any, *, incomplete: bool = False) -> GuardVerdict:
    detail = getattr(error, "message", None) or ("incomplete JSON document" if incomplete else "invalid JSON")
    return GuardVerdict(
        "rejected",
        True,
        f"invalid arguments for {call.name!r}: {detail}",
        "arguments",
        call_index=call.index,
        tool=call.name,
        offset=getattr(error, "offset", call.length),
        path=getattr(error, "path", None),
        keyword=getattr(error, "keyword", None),
        text="".join(call.fragments),
    )
