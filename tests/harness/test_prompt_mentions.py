"""A dataset case's prompt makes every `@` inert; a check author's own text is sent as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval_banana.harness.prompt import WORD_JOINER, inert_mentions, judge_prompt
from tests.builders import planned_judge

J = WORD_JOINER


@pytest.mark.parametrize(
    ("text", "sent"),
    [
        ("no mention here", "no mention here"),
        ("@README.md first", f"@{J}README.md first"),
        ("mail support@example.com", f"mail support@{J}example.com"),
        ("(@a) `@b` '@c' \\@d", f"(@{J}a) `@{J}b` '@{J}c' \\@{J}d"),
        ("a lone @ and a last @", "a lone @ and a last @"),
        ("@@twice", f"@{J}@{J}twice"),
        (f"already @{J}inert", f"already @{J}inert"),
    ],
)
def test_every_at_sign_before_a_name_gets_a_word_joiner(text: str, sent: str) -> None:
    assert inert_mentions(text) == sent
    assert inert_mentions(sent) == sent  # applying it twice changes nothing


def test_only_a_family_case_is_sent_with_its_mentions_inert(tmp_path: Path) -> None:
    own = planned_judge(id="own", project_root=tmp_path, instructions="Compare @docs/spec.md.")
    assert "Compare @docs/spec.md." in judge_prompt(check=own)
    case = own.model_copy(
        update={
            "id": "fam[r1]",
            "family": "fam",
            "definition": own.definition | {"description": "Reply to @bob"},
        }
    )
    sent = judge_prompt(check=case)
    assert f"Compare @{J}docs/spec.md." in sent and f"Reply to @{J}bob" in sent
    assert sent.replace(J, "") == judge_prompt(check=own).replace("judge own", "Reply to @bob")
