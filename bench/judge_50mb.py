"""Time and memory of verdict extraction on a large stream-json output.

Usage: python bench/judge_50mb.py [--mb 50]
Writes a synthetic claude stream (assistant events full of braces, then a terminal result
event) to bench/.cache/, then compares reading it (like `wc -c`) with judging it: the claude
dialect (Step A), its transcript (read from the start and the end only), and the same stream
without its result event (Step B over everything).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eval_banana.core.masking import NO_SECRETS  # noqa: E402
from eval_banana.harness.verdict import extract_verdict  # noqa: E402
from eval_banana.transcripts.record import transcript_events  # noqa: E402

CACHE = Path(__file__).resolve().parent / ".cache"


def write_stream(*, path: Path, size: int, with_result: bool) -> None:
    event = json.dumps(
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": 'Reading {files} "quoted" } ' * 30}],
            },
            "session_id": "s",
        }
    )
    with path.open("w", encoding="utf-8") as handle:
        written = 0
        while written < size:
            handle.write(event + "\n")
            written += len(event) + 1
        handle.write('{"score": 0, "reason": "plain line"}\n')
        if with_result:
            result = {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "result": '{"score": 1, "reason": "from the result event"}',
                "usage": {"input_tokens": 1, "output_tokens": 2},
            }
            handle.write(json.dumps(result) + "\n")


def timed(label: str, action: object) -> None:
    assert callable(action)
    started = time.perf_counter()
    outcome = action()
    elapsed = time.perf_counter() - started
    tracemalloc.start()
    action()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"{label:<34} {elapsed:7.2f} s   peak {peak / 1e6:7.1f} MB   -> {outcome}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=50)
    args = parser.parse_args()
    CACHE.mkdir(exist_ok=True)
    size = args.mb * 1_000_000
    with_result, without = CACHE / "stream_result.jsonl", CACHE / "stream_plain.jsonl"
    write_stream(path=with_result, size=size, with_result=True)
    write_stream(path=without, size=size, with_result=False)
    started = time.perf_counter()
    subprocess.run(["wc", "-c", str(with_result)], check=True)
    print(f"{'wc -c':<34} {time.perf_counter() - started:7.2f} s")
    timed(
        "read as text",
        lambda: len(with_result.read_text(encoding="utf-8", errors="replace")),
    )
    timed(
        "claude dialect (result event)",
        lambda: extract_verdict(dialect="claude", stdout_path=with_result).verdict,
    )
    timed(
        "claude transcript (start and end)",
        lambda: len(
            transcript_events(
                dialect="claude",
                stdout_path=with_result,
                stderr_path=None,
                max_chars=2000,
                masker=NO_SECRETS,
            )
        ),
    )
    timed(
        "text dialect, no result (Step B)",
        lambda: extract_verdict(dialect="text", stdout_path=without).verdict,
    )


if __name__ == "__main__":
    main()
