"""`python -m eval_banana.publish`: regenerate the committed schemas (`invoke schemas`)."""

from pathlib import Path

from eval_banana.publish.schemas import write_all


def main() -> None:
    repo = Path(__file__).resolve().parents[2]
    for path in write_all(targets=[repo / "schemas", repo / "eval_banana" / "schemas"]):
        print(path.relative_to(repo))


if __name__ == "__main__":
    main()
