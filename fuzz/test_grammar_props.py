"""Grammar-constrained sampling against the validators, driven by hypothesis (needs torch: ``local`` marker).

Property (DESIGN's "one truth"): for any tool set the generator draws, a random-weight tiny model sampling at
temperature 1 under toolguard's grammar (through ``model.generate`` with ``ToolCallLogitsProcessor`` or
through ``LocalGenerator.chat``) only produces calls that name an allowed tool and whose arguments the
``StreamValidator`` and jsonschema accept; a call cut by the token limit stays a viable prefix; the turn ends
after the call. The checks are the ``grammar`` fuzz target's (``toolguard._fuzz._targets._grammar``), so a
failure here replays with ``toolguard fuzz --replay`` once saved. Known open bugs (tests/regressions/data) are
tolerated by signature.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolguard._fuzz import get_target, open_regressions

pytestmark = pytest.mark.local
REGRESSIONS = Path(__file__).resolve().parent.parent / "tests" / "regressions" / "data"


@pytest.fixture(scope="module")
def grammar_target() -> Any:
    target = get_target("grammar")
    reason = target.unavailable()
    if reason is not None:
        pytest.skip(reason)
    target.open()
    yield target
    target.close()


@settings(
    max_examples=6,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_grammar_output_is_accepted_by_both_validators(grammar_target: Any, seed: int) -> None:
    case = grammar_target.generate(random.Random(seed))
    # The CI budget: short turns, and the default engine only (xgrammar's first use costs ~10 s of setup);
    # `toolguard fuzz --target grammar` covers both engines and longer turns.
    case["max_new_tokens"] = min(case["max_new_tokens"], 64)
    case["engine"] = "llguidance"
    known = {sig for target, sig in open_regressions(REGRESSIONS) if target == "grammar"}
    broken = [v for v in grammar_target.check(case) if v.key not in known]
    assert not broken, f"case {case}\n" + "\n".join(f"{v.invariant}: {v.observed[:1500]}" for v in broken)
