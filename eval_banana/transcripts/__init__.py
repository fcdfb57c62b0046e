"""Judge transcripts: an agent's output, read per dialect into events (messages, tool calls and
results, errors, usage, the answer) while it is read, bounded whatever the agent printed, and
written as `checks/<stem>.transcript.jsonl`.

May import: harness and core.
"""

from eval_banana.transcripts.live import TranscriptBuilder
from eval_banana.transcripts.record import TRANSCRIPT_SUFFIX, record_transcript, write_transcript

__all__ = ["TRANSCRIPT_SUFFIX", "TranscriptBuilder", "record_transcript", "write_transcript"]
