"""Fuzz target ``stream``: ``toolguard.StreamValidator`` against jsonschema and a JSON prefix recognizer.

Cases come from generated schemas with instances aimed at them, from the JSONSchemaBench seed corpus (labelled
instances), and from schema-free JSON; half of them are mutated. Invariants (h11's afl-server rule plus
DESIGN's "earliest honest rejection" and "one truth"):

- ``no-unexpected-exception``: construction, ``feed`` and ``close`` give verdicts or a ``ToolguardError``;
- ``split-invariance``: fed whole, one character at a time and at random cuts, the final verdict (state,
  offset, path, message) is the same;
- ``close-equals-jsonschema``: after ``close()`` the document is complete iff jsonschema (strict JSON: no
  duplicate keys, no NaN) accepts it;
- ``valid-rejected-at-prefix``: a document jsonschema accepts is never rejected while it is being fed;
- ``early-rejection``: a rejection at offset k claims no completion of ``text[:k+1]`` is valid; a known valid
  document or a constructed completion with that prefix that jsonschema accepts proves the claim false;
- ``syntax-error-missed``: where the text stops being a JSON prefix (index b), the validator has rejected
  during ``feed`` at an offset ≤ b; with the empty schema, exactly at b;
- ``offset-beyond-input``: a rejection returned by ``feed`` points into the text fed so far;
- ``sticky-rejection``: after a rejection, further ``feed``/``close`` calls repeat it;
- ``value-equals-json``: a complete document's ``.value`` equals ``json.loads`` of the text;
- ``feed-after-close``: feeding after ``close()`` raises ``UsageError``.

Documents nested deeper than ``DEPTH_SKIP`` skip the reference checks (the validator's depth cap is a limit,
not a schema verdict). Cost per case: O(n) per split plus O(completions) jsonschema validations on rejection.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from .._core import Target, Violation, register
from .._instances import gen_instance, gen_value, hypothesis_missing
from .._jsongen import dump, gen_schema, mutate
from .._jsonref import completions, is_complete, max_depth, reference_valid, scan_prefix, strict_loads
from ._common import (
    component,
    corpus_dir,
    describe_exception,
    json_shrinks,
    random_cuts,
    split_at,
    text_shrinks,
)

__all__ = ["StreamTarget"]

DEPTH_SKIP = 100
MAX_VALID_DOCS = 4


@dataclass(frozen=True, slots=True)
class _Outcome:
    state: str  # open | complete | rejected | error
    offset: int | None = None
    path: str | None = None
    message: str | None = None
    keyword: str | None = None
    during_feed: bool = False
    chunk_end: int = 0  # characters fed when the rejection came back
    value: Any = None
    has_value: bool = False

    @property
    def verdict(self) -> tuple[Any, ...]:
        return (self.state, self.offset, self.path, self.message)


def _outcome_of(verdict: Any, *, during_feed: bool, chunk_end: int) -> _Outcome:
    error = getattr(verdict, "error", None)
    if verdict.state == "rejected" and error is not None:
        return _Outcome(
            "rejected",
            error.offset,
            error.path,
            error.message,
            getattr(error, "keyword", None),
            during_feed,
            chunk_end,
        )
    return _Outcome(str(verdict.state), during_feed=during_feed, chunk_end=chunk_end)


class _Unexpected(Exception):
    def __init__(self, where: str, exc: BaseException) -> None:
        super().__init__(f"{where}: {describe_exception(exc)}")
        self.exc = exc


def _run(
    cls: Any, schema: Any, chunks: list[str], *, keep_feeding: bool = False
) -> tuple[_Outcome, list[str]]:
    """Feed chunks then close. Returns the outcome and sticky-rejection complaints (when ``keep_feeding``)."""
    from ..._exceptions import ToolguardError

    complaints: list[str] = []
    try:
        validator = cls(schema)
    except ToolguardError as exc:
        return _Outcome("error", message=type(exc).__name__), complaints
    except Exception as exc:
        raise _Unexpected("StreamValidator(schema)", exc) from exc
    fed = 0
    first: _Outcome | None = None
    for chunk in chunks:
        try:
            verdict = validator.feed(chunk)
        except ToolguardError as exc:
            return _Outcome("error", message=type(exc).__name__), complaints
        except Exception as exc:
            raise _Unexpected(f"feed({chunk[:40]!r}) after {fed} characters", exc) from exc
        fed += len(chunk)
        if verdict.state == "rejected":
            outcome = _outcome_of(verdict, during_feed=True, chunk_end=fed)
            if first is None:
                first = outcome
                if not keep_feeding:
                    return first, complaints
            elif outcome.verdict != first.verdict:
                complaints.append(
                    f"feed after the rejection gave {outcome.verdict}, first was {first.verdict}"
                )
        elif first is not None:
            complaints.append(f"feed after the rejection gave state {verdict.state!r}")
    try:
        verdict = validator.close()
    except ToolguardError as exc:
        if first is not None:
            return first, complaints
        return _Outcome("error", message=type(exc).__name__), complaints
    except Exception as exc:
        raise _Unexpected("close()", exc) from exc
    outcome = _outcome_of(verdict, during_feed=False, chunk_end=fed)
    if first is not None:
        if outcome.verdict != first.verdict:
            complaints.append(
                f"close() after the rejection gave {outcome.verdict}, first was {first.verdict}"
            )
        return first, complaints
    if outcome.state == "complete":
        try:
            value = validator.value
        except Exception as exc:
            raise _Unexpected(".value after a complete verdict", exc) from exc
        outcome = _Outcome("complete", during_feed=False, chunk_end=fed, value=value, has_value=True)
    return outcome, complaints


def _same_json(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return bool(a == b)
    if isinstance(a, str) or isinstance(b, str):
        return bool(a == b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    return False


def _reference(schema: Any, text: str, *, check_schema: bool) -> tuple[bool | None, Any]:
    """(jsonschema's verdict on the text or None when undecidable, the parsed value or None)."""
    if not is_complete(text):
        return False, None
    try:
        value = strict_loads(text)
    except ValueError as exc:
        if "duplicate key" in str(exc):
            return False, None
        return None, None  # e.g. Python's int-digits limit: the reference cannot parse it
    return reference_valid(schema, value, check_schema=check_schema), value


class StreamTarget(Target):
    name = "stream"
    description = "StreamValidator vs jsonschema: splits, prefixes, offsets"

    def __init__(self) -> None:
        super().__init__()
        self._corpus: list[tuple[str, Any, list[Any]]] | None = None

    def _validator_cls(self) -> tuple[Any, str | None]:
        return component("toolguard._stream", "StreamValidator")

    def unavailable(self) -> str | None:
        return self._validator_cls()[1] or hypothesis_missing()

    def corpus(self) -> list[tuple[str, Any, list[Any]]]:
        if self._corpus is None:
            self._corpus = []
            root = corpus_dir()
            if root is not None:
                for path in sorted((root / "jsonschemabench").glob("*.json")):
                    record = json.loads(path.read_text())
                    self._corpus.append((path.stem, record["schema"], record.get("tests", [])))
        return self._corpus

    def generate(self, rng: random.Random) -> dict[str, Any]:
        roll = rng.random()
        corpus = self.corpus()
        valid_docs: list[str] = []
        if roll < 0.3 and corpus:
            name, schema, tests = rng.choice(corpus)
            source = f"corpus:{name}"
            values = [t["data"] for t in tests]
        elif roll < 0.4:
            schema, source = rng.choice([{}, True]), "schema-free"
            values = [gen_value(rng) for _ in range(3)]
        else:
            schema, source = gen_schema(rng), "generated"
            values = gen_instance(rng, schema, count=3)
        texts = [dump(rng, value) for value in values] or ["{}"]
        document = rng.choice(texts)
        valid_docs = texts[:MAX_VALID_DOCS]
        mutation = None
        if rng.random() < 0.5:
            for _ in range(rng.choice([1, 1, 1, 2, 3])):
                document, mutation = mutate(rng, document)
        return {
            "source": source,
            "schema": schema,
            "schema_trusted": True,  # generated (tested generator) or corpus (checked when selected)
            "document": document,
            "mutation": mutation,
            "cuts": random_cuts(rng, len(document)),
            "known_docs": valid_docs,
        }

    def check(self, case: dict[str, Any]) -> list[Violation]:
        cls, reason = self._validator_cls()
        if cls is None:
            return [Violation("unavailable", "StreamValidator exists", str(reason))]
        schema, text = case["schema"], case["document"]
        try:
            runs = {
                "whole": _run(cls, schema, [text]),
                "one character at a time": _run(cls, schema, list(text)),
                "random cuts": _run(cls, schema, split_at(text, case.get("cuts", [])), keep_feeding=True),
            }
        except _Unexpected as exc:
            return [
                Violation(
                    "no-unexpected-exception",
                    "verdicts or ToolguardError only",
                    str(exc),
                    signature=f"exception:{type(exc.exc).__qualname__}",
                )
            ]
        whole, _ = runs["whole"]
        if whole.state == "error":
            self.stats[f"refused ({whole.message})"] += 1
            return []
        out: list[Violation] = []
        for label, (outcome, _) in runs.items():
            if outcome.verdict != whole.verdict:
                out.append(
                    Violation(
                        "split-invariance",
                        "the same verdict whatever the split",
                        f"whole: {whole.verdict}\n{label}: {outcome.verdict}",
                    )
                )
                break
        complaints = runs["random cuts"][1]
        if complaints:
            out.append(
                Violation("sticky-rejection", "a rejection repeats on later calls", "; ".join(complaints))
            )
        single, _ = runs["one character at a time"]
        out += self._offsets(case, single)
        out += self._reference_checks(case, single)
        out += self._feed_after_close(cls, schema, text)
        return out

    def _offsets(self, case: dict[str, Any], single: _Outcome) -> list[Violation]:
        text = case["document"]
        out: list[Violation] = []
        if (
            single.state == "rejected"
            and single.during_feed
            and (single.offset is None or not 0 <= single.offset < single.chunk_end)
        ):
            out.append(
                Violation(
                    "offset-beyond-input",
                    f"a rejection from feed points into the {single.chunk_end} characters fed",
                    f"offset {single.offset}",
                )
            )
        bad, _ = scan_prefix(text)
        if bad is not None and max_depth(text[: bad + 1]) <= DEPTH_SKIP and single.keyword != "limit":
            rejected_in_time = (
                single.state == "rejected"
                and single.during_feed
                and single.offset is not None
                and single.offset <= bad
            )
            if not rejected_in_time:
                out.append(
                    Violation(
                        "syntax-error-missed",
                        f"rejected while feeding, at offset <= {bad} where {text[bad]!r} breaks JSON syntax",
                        f"verdict {single.verdict}, during feed: {single.during_feed}",
                    )
                )
            elif case["schema"] in ({}, True) and single.offset != bad:
                out.append(
                    Violation(
                        "early-rejection",
                        f"with the empty schema, rejected exactly at the syntax error, offset {bad}",
                        f"offset {single.offset}: {single.message}",
                        signature="early-rejection:empty-schema",
                    )
                )
        return out

    def _reference_checks(self, case: dict[str, Any], single: _Outcome) -> list[Violation]:
        schema, text = case["schema"], case["document"]
        if max_depth(text) > DEPTH_SKIP or single.keyword == "limit":
            self.stats["over a limit (reference skipped)"] += 1
            return []
        check = not case.get("schema_trusted")
        expected, value = _reference(schema, text, check_schema=check)
        if expected is None:
            self.stats["reference undecided"] += 1
            return []
        self.stats["valid" if expected else "invalid"] += 1
        out: list[Violation] = []
        if expected and single.state == "rejected" and single.during_feed:
            out.append(
                Violation(
                    "valid-rejected-at-prefix",
                    "a document jsonschema accepts is never rejected while it streams",
                    f"rejected at offset {single.offset} (path {single.path!r}): {single.message}",
                )
            )
        elif (single.state == "complete") != expected:
            out.append(
                Violation(
                    "close-equals-jsonschema",
                    f"after close(): {'complete' if expected else 'rejected'}, as jsonschema says",
                    f"verdict {single.verdict}",
                    signature=f"close-equals-jsonschema:{'missed' if not expected else 'refused'}",
                )
            )
        if expected and single.has_value and not _same_json(single.value, value):
            out.append(
                Violation(
                    "value-equals-json",
                    f".value equals json.loads of the document: {value!r}"[:1000],
                    f".value is {single.value!r}"[:1000],
                )
            )
        if single.state == "rejected" and single.offset is not None and 0 <= single.offset < len(text):
            out += self._early(case, text[: single.offset + 1], single, check)
        return out

    def _early(self, case: dict[str, Any], prefix: str, single: _Outcome, check: bool) -> list[Violation]:
        schema = case["schema"]
        witnesses = [doc for doc in case.get("known_docs", []) if doc.startswith(prefix)]
        witnesses += completions(prefix)
        for doc in witnesses:
            if max_depth(doc) > DEPTH_SKIP:
                continue
            verdict, _ = _reference(schema, doc, check_schema=check)
            if verdict:
                return [
                    Violation(
                        "early-rejection",
                        f"rejection at offset {single.offset} only if no completion of the prefix is valid",
                        f"rejected at {single.offset} ({single.message}); "
                        "yet jsonschema accepts the completion "
                        f"{doc!r}"[:2000],
                    )
                ]
        return []

    def _feed_after_close(self, cls: Any, schema: Any, text: str) -> list[Violation]:
        from ..._exceptions import ToolguardError, UsageError

        try:
            validator = cls(schema)
            validator.feed(text)
            validator.close()
        except ToolguardError:
            return []
        except Exception:  # reported by the main runs already
            return []
        try:
            validator.feed("x")
        except UsageError:
            return []
        except Exception as exc:
            return [
                Violation(
                    "feed-after-close", "feed() after close() raises UsageError", describe_exception(exc)
                )
            ]
        return [
            Violation("feed-after-close", "feed() after close() raises UsageError", "it returned a verdict")
        ]

    def shrink(self, case: dict[str, Any]) -> Any:
        """Coarse first: the empty schema, then document halves, schema members, then finer text cuts."""
        doc = case["document"]

        def with_doc(text: str) -> dict[str, Any]:
            return {**case, "document": text, "cuts": [c for c in case.get("cuts", []) if c < len(text)]}

        if case["schema"] not in ({}, True):
            yield {**case, "schema": {}, "schema_trusted": False}
        if case.get("known_docs"):
            yield {**case, "known_docs": []}
        fine = []
        for smaller in text_shrinks(doc):
            if len(doc) - len(smaller) >= max(1, len(doc) // 8):
                yield with_doc(smaller)
            else:
                fine.append(smaller)
        for smaller_schema in json_shrinks(case["schema"]):
            yield {**case, "schema": smaller_schema, "schema_trusted": False}
        for smaller in fine:
            yield with_doc(smaller)


register("stream", StreamTarget)
