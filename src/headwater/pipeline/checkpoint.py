"""Opening a pipeline's checkpoint directory: its format checked before anything is written.

The directory holds Spark's checkpoint (`metadata`, `offsets/`, `commits/`, `sources/`,
which Spark versions itself and which stay Spark's alone) and Headwater's files beside it:
the status file, the staging of executor batches (`staging/`), the Datastream file log and
the logs (`logs/`).  Headwater's layer carries `.headwater-format.json`
(`headwater.state_format`), so a release never resumes from a checkpoint a newer one wrote:
its batch markers or staging could mean something else and be applied twice or skipped.
"""

from __future__ import annotations

from pathlib import Path

from headwater.state_format import CHECKPOINT, open_state_dir


def open_checkpoint(checkpoint: Path) -> Path:
    """The pipeline's checkpoint directory, created if missing, its format checked and
    stamped (the pipeline is its only writer); StateFormatError when a newer Headwater
    wrote it.  Called first by every start of a pipeline (`headwater pipeline`, the
    service's pipelines, `start_flows`)."""
    checkpoint = Path(checkpoint)
    checkpoint.mkdir(parents=True, exist_ok=True)
    open_state_dir(checkpoint, CHECKPOINT, stamp=True)
    return checkpoint


def check_checkpoint(checkpoint: Path) -> None:
    """The same check for commands that only look (`headwater status`): nothing written."""
    open_state_dir(Path(checkpoint), CHECKPOINT, stamp=False)
