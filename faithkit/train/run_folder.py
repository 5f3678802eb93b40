"""A training run's output folder: which run owns it, and the logs written into it.

``run_config.yaml`` ties the folder to one config and the content of its train and dev rows, so a
folder is never reused by another run by mistake and ``--resume`` continues only the run it holds;
``metrics.csv`` (step, key, value) and ``generations.jsonl`` (the decoded dev responses of each evaluation)
are the run's logs, cut back to the saved state on resume.
"""

from __future__ import annotations

import csv
from pathlib import Path

import yaml
from accelerate import Accelerator

from ..data.results import content_digest
from ..errors import ConfigError, OutputError
from ..data.files import open_append, to_json, write_text
from ..data.schema import WHOLE, Object, read_json_line
from .config import TrainConfig

RUN_CONFIG = "run_config.yaml"
ROWS_KEY = "rows"  # run_config.yaml's digests of the train and dev rows, beside the config's sections
SAMPLE = Object({"step": WHOLE})
"""A record of the run's ``generations.jsonl`` (a resume drops those after the step it restarts from)."""


def run_name(config: TrainConfig, output_dir: Path) -> str:
    """The run's name in the trackers and model cards: ``evaluation.run_name``, else the output folder's name."""
    return config.evaluation.run_name or output_dir.resolve().name


def run_record(config: TrainConfig, train_rows: list, dev_rows: list) -> dict:
    """What ``run_config.yaml`` ties the folder to: the config, and a digest of the rows it read.

    The digests make a file edited in place (same path, same config) another run, so that a
    resume never mixes the earlier steps' ``generations.jsonl`` and metrics with new data.
    """
    return {
        **config.to_dict(),
        ROWS_KEY: {
            split: content_digest([row.digest() for row in rows])
            for split, rows in (("train", train_rows), ("dev", dev_rows))
        },
    }


def check_output_dir(output_dir: Path, record: dict, resume: bool) -> None:
    """The folder is new or holds this very run (:func:`run_record`); a saved state there must be resumed,
    and ``--resume`` needs one.

    A folder holding only a run's config (a start that failed before training, e.g. on a bad data file) is
    free for any config; one with this config but no state (stopped before its first save) starts again.
    """
    saved, state = output_dir / RUN_CONFIG, output_dir / "state"
    if resume and not state.is_dir():
        raise ConfigError(f"--resume: no saved state in {state}; drop --resume to start the run")
    if saved.exists() and [path.name for path in output_dir.iterdir()] == [RUN_CONFIG]:
        return
    if not saved.exists():
        if output_dir.exists() and any(output_dir.iterdir()):
            raise OutputError(
                f"output folder {output_dir} is not empty and holds no faithkit training run; "
                f"choose another --output-dir"
            )
        return
    differences = _differences(yaml.safe_load(saved.read_text()), record)
    if differences:
        raise OutputError(
            f"output folder {output_dir} holds a different run ({'; '.join(differences[:3])}); "
            f"choose another --output-dir, or delete the folder to start over"
        )
    if state.is_dir() and not resume:
        raise OutputError(
            f"output folder {output_dir} already holds this run; pass --resume to continue it, "
            f"or choose another --output-dir"
        )


def claim_output_dir(output_dir: Path, record: dict, resume: bool, accelerator: Accelerator) -> None:
    """:func:`check_output_dir`, then ``record`` written to ``run_config.yaml`` by the main process."""
    check_output_dir(output_dir, record, resume)
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        output_dir.mkdir(parents=True, exist_ok=True)
        write_text(output_dir / RUN_CONFIG, yaml.safe_dump(record, sort_keys=False))


def _differences(saved: dict, current: dict, prefix: str = "") -> list[str]:
    out = []
    for key in sorted(set(saved) | set(current)):
        a, b = saved.get(key), current.get(key)
        if key == ROWS_KEY and not prefix:
            out += [
                f"the {split} rows' content changed since that run started (an edited file?)"
                for split in ("train", "dev")
                if (a or {}).get(split) != (b or {}).get(split)
            ]
        elif isinstance(a, dict) and isinstance(b, dict) and not prefix:  # sections; model.config compares whole
            out += _differences(a, b, f"{key}.")
        elif a != b:
            out.append(f"{prefix}{key}: {a!r} there, {b!r} here")
    return out


class RunLog:
    """``metrics.csv`` (one ``step,key,value`` line per number) and the trackers, from the main process only.

    Lines of steps after ``keep_until`` are dropped: on ``--resume`` the steps after the saved
    state run again, and a run started afresh (-1) keeps nothing of an attempt that never saved.
    """

    def __init__(self, output_dir: Path, accelerator: Accelerator, keep_until: int):
        self.accelerator = accelerator
        self.csv = output_dir / "metrics.csv"
        self.samples = output_dir / "generations.jsonl"
        if accelerator.is_main_process:
            self._drop_after(keep_until)
            if not self.csv.exists():
                write_text(self.csv, "step,key,value\n")

    def _drop_after(self, step: int) -> None:
        if self.csv.exists():
            lines = self.csv.read_text().splitlines(keepends=True)
            kept = [line for line in lines[1:] if int(line.split(",", 1)[0]) <= step]
            write_text(self.csv, "".join(lines[:1] + kept))
        if self.samples.exists():
            lines = self.samples.read_text().splitlines(keepends=True)
            fix = "delete that line, or start the run again in another --output-dir"
            kept = [
                line
                for number, line in enumerate(lines, start=1)
                if read_json_line(line, SAMPLE, f"{self.samples}, line {number}", fix, error=OutputError)["step"]
                <= step
            ]
            write_text(self.samples, "".join(kept))

    def values(self, step: int, values: dict[str, float]) -> None:
        self.accelerator.log(values, step=step)
        if self.accelerator.is_main_process:
            with open_append(self.csv, "--output-dir", newline="") as handle:
                csv.writer(handle).writerows([step, key, repr(float(value))] for key, value in values.items())

    def generations(self, step: int, rows, responses: dict[str, list[str]]) -> None:
        with open_append(self.samples, "--output-dir") as handle:
            for decoder, texts in responses.items():
                for row, text in zip(rows, texts):
                    handle.write(to_json({"step": step, "decoder": decoder, "id": row.id, "response": text}) + "\n")
