"""``faithkit data export``: any corpus as rows in faithkit's one schema, ready for generate, score and sweep."""

from __future__ import annotations

from dataclasses import dataclass

from ..data.corpora import CORPORA, EXPORT_FORMATS
from ..data.files import to_json
from ..settings.options import add_flags, option
from ..data.paths import PathArg


@dataclass
class ExportFlags:
    name: str | None = option(None, "corpus", choices=sorted(CORPORA), positional=True)
    split: str | None = option(
        None,
        "split of the corpus ("
        + "; ".join(f"{name}: {', '.join(corpus.splits)}" for name, corpus in sorted(CORPORA.items()))
        + ")",
        required=True,
    )
    path: str | None = option(
        None,
        "folder of the official release (unset: see the corpus; FaithDial: the hub)",
        flag_type=PathArg("input folder"),
    )
    history_turns: int = option(2, "turns of history kept (2 as the PMI-DECODE paper)", low=0)
    output: str | None = option(
        None, "where to write the rows (a file, or a folder for arrow)", flag_type=PathArg("output"), required=True
    )
    format: str = option("jsonl", "jsonl, parquet (one file) or arrow (a save_to_disk folder)", choices=EXPORT_FORMATS)
    half: str | None = option(
        None,
        "keep one half of the split's conversations (chosen by a hash of the conversation id: the same in every "
        "run, and the halves share no conversation), to choose settings on dev and report on test",
        choices=("dev", "test"),
    )


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "data",
        help="export corpora (Topical-Chat, FaithDial, MultiDoc2Dial) as rows",
        description="Read a corpus into faithkit's row schema.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    export = actions.add_parser(
        "export",
        help="write one split of a corpus as JSONL, Parquet or a saved dataset",
        description="Write one split: one row per response turn with id, document, history (the last "
        "--history-turns turns), response and the same text as gold, plus the corpus's own fields. "
        "The output (JSONL, a Parquet file or a datasets save_to_disk folder) feeds 'faithkit "
        "generate', 'score', 'sweep' and 'train' directly. Prints a summary of the turns kept and "
        "skipped.",
    )
    add_flags(export, ExportFlags)
    export.set_defaults(run=run_export)
    from .declared_files import Files, Output, declare_files

    declare_files(
        export,
        Files(
            reads=export_reads,
            writes=lambda args: [Output("--output", args.output, folder=args.format == "arrow")],
        ),
    )


def export_reads(args) -> list:
    """The corpus folder (--path, else its default one) and the whole data root, where the benchmarks live."""
    from ..data import data_root
    from ..data.corpora import CORPORA

    folder = CORPORA[args.name].folder
    return [args.path or (folder and data_root() / folder), data_root()]


def run_export(args) -> int:
    from ..data.corpora import export_corpus

    summary = export_corpus(
        args.name,
        args.split,
        args.output,
        path=args.path,
        history_turns=args.history_turns,
        file_format=args.format,
        half=args.half,
    )
    print(to_json(summary))
    return 0
