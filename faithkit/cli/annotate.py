"""``faithkit annotate build | report | export``: a blind A/B human evaluation page, the report of its answers, and
the rated responses as rows."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from ..settings.options import add_flags, option
from ..data.paths import PathArg
from .declared_files import Files, Output, declare_files

logger = logging.getLogger(__name__)


@dataclass
class BuildFlags:
    sweep: str | None = option(
        None, "a 'faithkit sweep' --out folder; --a and --b name two of its cells", flag_type=PathArg("input folder")
    )
    a: str | None = option(None, "first system: a cell of --sweep")
    b: str | None = option(None, "second system: a cell of --sweep")
    a_file: str | None = option(
        None, "first system: a 'faithkit generate' output (instead of --sweep/--a)", flag_type=PathArg("text")
    )
    b_file: str | None = option(
        None, "second system: a 'faithkit generate' output of the same rows", flag_type=PathArg("text")
    )
    contexts: int = option(50, "items to annotate (50 as the paper)", low=1)
    seed: int = option(0, "seed of the sample and the sides")
    out: str | None = option(None, "task folder to write", flag_type=PathArg("output folder"), required=True)


@dataclass
class ReportFlags:
    task: str | None = option(
        None, "the task folder 'annotate build' wrote", flag_type=PathArg("input folder"), positional=True
    )
    answers: list[str] | None = option(
        None, "the exported answers, one JSON file per annotator", flag_type=PathArg("text"), positional=True, nargs="+"
    )
    bootstrap: int = option(1000, "bootstrap draws", low=1)
    seed: int = option(0, "bootstrap seed")


@dataclass
class ExportFlags:
    task: str | None = option(
        None, "the task folder 'annotate build' wrote", flag_type=PathArg("input folder"), positional=True
    )
    answers: list[str] | None = option(
        None, "the exported answers, one JSON file per annotator", flag_type=PathArg("text"), positional=True, nargs="+"
    )
    output: str | None = option(
        None, "JSONL file to write, one row per rated response", flag_type=PathArg("output file"), required=True
    )


def register(subparsers) -> None:
    """``faithkit annotate`` and its subcommands ``build``, ``report`` and ``export``."""
    parser = subparsers.add_parser(
        "annotate",
        help="human evaluation: a blind A/B annotation page and its report",
        description="Human evaluation as the PMI-DECODE paper ran it: annotators rate two "
        "systems' responses for faithfulness, relevance and grammar.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    build = actions.add_parser(
        "build",
        help="write the annotation page and its key for two systems",
        description="Sample --contexts rows where two systems answer differently (two cells of a sweep, named as in "
        "its sweep.csv, or two 'faithkit generate' outputs of the same rows), show each row's two "
        "responses in a seeded random order, and write to --out: annotate.html (one self-contained page "
        "for the annotators; it works opened from disk, keeps answers in the browser and exports them as "
        "JSON) and key.json (which system is on which side, and the responses' automatic scores; keep it "
        "from the annotators).",
    )
    add_flags(build, BuildFlags)
    build.set_defaults(run=run_build)
    declare_files(
        build,
        Files(
            reads=lambda args: [args.sweep, args.a_file, args.b_file],
            writes=lambda args: [Output("--out", args.out, folder=True)],
        ),
    )

    report = actions.add_parser(
        "report",
        help="shares, win rates, agreement and metric correlation from the annotators' exports",
        description="Read the answers the annotators exported from the page, check them against the task's key "
        "(same task, every item answered, one file per annotator), and print markdown tables: per "
        "dimension and system the Agree/Neutral/Disagree shares and win rates with 95% bootstrap "
        "intervals over items, a paired sign test, Krippendorff's alpha (ordinal) and Fleiss' kappa, "
        "per-annotator counts, and the Spearman correlation of human faithfulness with PMI-FAITH, Q² "
        "and knowledge precision where the key has them. Writes report.csv and report.png to TASK.",
    )
    add_flags(report, ReportFlags)
    report.set_defaults(run=run_report)
    declare_files(
        report,
        Files(
            reads=lambda args: [*args.answers, Path(args.task) / "key.json"],
            writes=lambda args: [Output("TASK", Path(args.task) / name) for name in ("report.csv", "report.png")],
        ),
    )
    _register_export(actions)


def _register_export(actions) -> None:
    """``faithkit annotate export``."""
    export = actions.add_parser(
        "export",
        help="the rated responses as JSONL rows (the claim checker's rated data)",
        description="Read the answers the annotators exported from the page, check them against the task's key as "
        "'report' does, and write one JSONL row per rated response: id (TASK:ITEM:SYSTEM), row, system (its name in "
        "key.json), the document, history and response the page showed, ratings (per dimension, each annotator's "
        "answer) and aggregate (per dimension, the count of each answer and the mean level, Agree 2, Neutral 1, "
        "Disagree 0). 'faithkit checker data' takes such files as its 'rated' examples.",
    )
    add_flags(export, ExportFlags)
    export.set_defaults(run=run_export)
    declare_files(
        export,
        Files(
            reads=lambda args: [*args.answers, Path(args.task) / "key.json", Path(args.task) / "annotate.html"],
            writes=lambda args: [Output("--output", args.output)],
        ),
    )


def run_build(args) -> int:
    from ..annotate import System, build_task, sweep_system
    from ..errors import ConfigError

    files, cells = (args.a_file, args.b_file), (args.a, args.b)
    if args.sweep and any(files):
        raise ConfigError("give either --sweep with --a and --b, or --a-file and --b-file, not both")
    if args.sweep:
        if not all(cells):
            raise ConfigError("--sweep needs --a CELL and --b CELL (cells as named in its sweep.csv)")
        systems = [sweep_system(args.sweep, cell) for cell in cells]
    elif all(files):
        if any(cells):
            raise ConfigError("--a and --b name cells of --sweep; with --a-file/--b-file leave them out")
        names = [None, None] if Path(files[0]).stem != Path(files[1]).stem else list(files)  # stems, when they differ
        systems = [System.from_file(path, name) for path, name in zip(files, names)]
    else:
        raise ConfigError("name the two systems: --sweep DIR --a CELL --b CELL, or --a-file FILE --b-file FILE")
    a, b = systems
    task = build_task(a, b, out=args.out, contexts=args.contexts, seed=args.seed)
    logger.info(
        "task %s: %d items -> %s/annotate.html (for the annotators) and key.json (keep it from them)",
        task.id,
        len(task.key["items"]),
        task.out,
    )
    return 0


def run_report(args) -> int:
    from ..annotate import read_annotations, read_key, summarize, write_report

    annotations = read_annotations(read_key(args.task), args.answers)
    print(write_report(args.task, summarize(annotations, resamples=args.bootstrap, seed=args.seed)))
    return 0


def run_export(args) -> int:
    from ..annotate import read_annotations, read_key
    from ..annotate.exports import rated_rows
    from ..data.files import to_json, write_text

    rows = rated_rows(args.task, read_annotations(read_key(args.task), args.answers))
    write_text(args.output, "".join(to_json(row) + "\n" for row in rows))
    logger.info("%d rated responses -> %s", len(rows), args.output)
    return 0
