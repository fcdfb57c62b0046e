import pytest

from eval_banana.core.caseid import case_check_id, family_of, split_case_check_id


def test_a_case_check_id_names_its_family_and_case() -> None:
    check_id = case_check_id(family="qa_judge", case_id="refund.01")
    assert check_id == "qa_judge[refund.01]"
    assert split_case_check_id(check_id) == ("qa_judge", "refund.01")
    assert family_of(check_id) == "qa_judge"


def test_a_plain_check_id_has_no_family() -> None:
    assert family_of("qa_judge") is None
    assert split_case_check_id("qa[judge") is None
    assert split_case_check_id("a[b]c") is None


@pytest.mark.parametrize(
    ("family", "case_id"),
    [
        ("qa_judge", "q00001"),
        ("_lead", "0001"),
        ("fam", "ends."),
        ("fam-x", "._dots_."),
        ("f" * 45, "x"),
        ("a" * 39, "b"),
        ("_", "_"),
        ("x", "." * 50),
    ],
)
def test_a_case_stem_is_the_stem_of_its_check_id(family: str, case_id: str) -> None:
    from eval_banana.core.stem import artifact_stem, case_artifact_stem

    check_id = case_check_id(family=family, case_id=case_id)
    assert case_artifact_stem(family=family, case_id=case_id) == artifact_stem(check_id=check_id)
    given = case_artifact_stem(family=family, case_id=case_id, check_id=check_id)
    assert given == artifact_stem(check_id=check_id)
