"""The training corpora read into datasets: exact rows on small files in each official schema, declared features,
skip counts, Topical-Chat on the real shared data, error messages, and the export -> read_rows round trips."""

import json
import logging
import shutil
from pathlib import Path

import datasets
import pytest

from faithkit.data import Row, read_rows
from faithkit.data.corpora import CORPORA, corpus_summary, export_corpus, load_corpus
from faithkit.errors import ConfigError, InputError, OutputError

FIXTURES = Path(__file__).parent / "data" / "corpora"
TOPICALCHAT = FIXTURES / "topicalchat"
FAITHDIAL = FIXTURES / "faithdial"
MULTIDOC2DIAL = FIXTURES / "multidoc2dial"

QUARTERBACK = "A quarterback is the leader of a team's offense in gridiron football."
PINK = "Pink is a pale red color.\nIt is named after a flower, the pink."
IOWA = "The Iowa Hawkeyes are the athletic teams of the University of Iowa."
FOOTBALL = "Football is a family of team sports that involve kicking a ball to score a goal."


def rows_of(*args, **options) -> tuple[list[Row], dict]:
    """load_corpus's dataset as Rows (``gold``, checked to repeat the response, left out) and its summary."""
    dataset = load_corpus(*args, **options)
    assert isinstance(dataset, datasets.Dataset) and dataset.num_rows == corpus_summary(dataset)["kept"]
    assert dataset["gold"] == dataset["response"]
    rows = [
        Row(
            id=record.pop("id"),
            document=record.pop("document"),
            history=record.pop("history"),
            response=record.pop("response"),
            extras={k: v for k, v in record.items() if k != "gold"},
        )
        for record in dataset
    ]
    return rows, corpus_summary(dataset)


def chat_row(
    conversation,
    turn,
    document,
    history,
    response,
    agent,
    sources,
    entities,
    config,
    sentiment="Curious to dive deeper",
    rating="Good",
):
    return Row(
        id=f"{conversation}:{turn}",
        document=document,
        history=history,
        response=response,
        extras={
            "conversation_id": conversation,
            "turn": turn,
            "config": config,
            "agent": agent,
            "sentiment": sentiment,
            "knowledge_source": sources,
            "turn_rating": rating,
            "entities": entities,
        },
    )


def test_topicalchat_pre_build_rows_and_counts():
    rows, rows_summary = rows_of("topicalchat", "valid_freq", TOPICALCHAT)
    assert rows == [
        chat_row(
            "t_one",
            1,
            QUARTERBACK,
            ["Hi! Are you a football fan?"],
            "I am. The quarterback leads the offense.",
            "agent_2",
            ["FS1"],
            ["Quarterback"],
            "A",
            rating="Excellent",
        ),
        chat_row(
            "t_one",
            5,
            IOWA + "\n" + FOOTBALL,
            ["The article says the Redskins won on Sunday.", "Pink is my favourite colour."],
            "The Hawkeyes play football at Iowa.",
            "agent_2",
            ["FS2", "FS3"],
            ["Iowa Hawkeyes", "Football"],
            "A",
            rating="Passable",
        ),
        chat_row(
            "t_one",
            6,
            FOOTBALL,
            ["Pink is my favourite colour.", "The Hawkeyes play football at Iowa."],
            "Football is about kicking a ball, and the Redskins kick well.",
            "agent_1",
            ["FS3", "AS2"],
            ["Football"],
            "A",
        ),
        chat_row(
            "t_two",
            1,
            PINK,
            ["Hello there!"],
            "Pink is named after a flower, did you know?",
            "agent_1",
            ["FS1"],
            ["Pink"],
            "C",
        ),
        chat_row(
            "t_two",
            3,
            IOWA + "\n" + PINK,
            ["Pink is named after a flower, did you know?", "The Chiefs once sold pink jerseys."],
            "Iowa's teams are the Hawkeyes, and pink is a pale red.",
            "agent_1",
            ["FS3", "FS1"],
            ["Iowa Hawkeyes", "Pink"],
            "C",
        ),
    ]
    assert rows_summary == {
        "corpus": "topicalchat",
        "split": "valid_freq",
        "source": str(TOPICALCHAT / "conversations" / "valid_freq.json"),
        "reading_sets": "pre-build",
        "turns": 11,
        "kept": 5,
        "skipped_opening": 2,
        "skipped_personal": 2,
        "skipped_no_source": 2,  # the article-only turn t_one:3 and t_two:2, whose section has fun facts only
    }


def test_topicalchat_post_build_grounds_fun_facts_and_article_turns():
    rows, rows_summary = rows_of("topicalchat", "valid_rare", TOPICALCHAT)
    documents = {row.id: row.document for row in rows}
    assert documents == {
        "t_one:1": QUARTERBACK + "\nQuarterbacks call the plays in the huddle.",
        "t_one:3": "The Redskins beat the Cardinals 24-6 on Sunday.",
        "t_one:5": IOWA
        + "\nIowa's visiting locker room is painted pink.\n"
        + FOOTBALL
        + "\nThe oldest football club was founded in 1857.",
        "t_one:6": FOOTBALL + "\nThe oldest football club was founded in 1857.\nA football pitch can be 120 yards long."
        "\nAdrian Peterson ran for 96 yards.",
        "t_two:1": PINK + "\nFlamingos are pink because of their food.",
        "t_two:2": "The Chiefs sold pink jerseys for charity.\nArrowhead is the loudest stadium.",
        "t_two:3": IOWA
        + "\nIowa's visiting locker room is painted pink.\n"
        + PINK
        + "\nFlamingos are pink because of their food.",
    }
    assert rows[1].extras["entities"] == [] and rows[1].history == [
        "I am. The quarterback leads the offense.",
        "I played quarterback in school.",
    ]
    assert (rows_summary["reading_sets"], rows_summary["kept"], rows_summary["skipped_no_source"]) == (
        "post-build",
        7,
        0,
    )


def test_topicalchat_flat_layout_reads_like_the_clone(tmp_path):
    shutil.copy(TOPICALCHAT / "conversations" / "valid_freq.json", tmp_path / "valid_freq.json")
    shutil.copy(
        TOPICALCHAT / "reading_sets" / "pre-build" / "valid_freq.json", tmp_path / "reading_set_valid_freq.json"
    )
    shutil.copy(TOPICALCHAT / "src" / "wiki" / "wiki.json", tmp_path / "wiki.json")
    flat, flat_summary = rows_of("topicalchat", "valid_freq", tmp_path)
    clone, clone_summary = rows_of("topicalchat", "valid_freq", TOPICALCHAT)
    assert flat == clone and len(flat) == 5
    assert {k: v for k, v in flat_summary.items() if k != "source"} == {
        k: v for k, v in clone_summary.items() if k != "source"
    }


def test_topicalchat_options_keep_the_opening_and_personal_turns():
    rows, rows_summary = rows_of("topicalchat", "valid_freq", TOPICALCHAT, keep_opening=True, keep_personal=True)
    by_id = {row.id: row for row in rows}
    assert list(by_id) == ["t_one:0", "t_one:1", "t_one:4", "t_one:5", "t_one:6", "t_two:1", "t_two:3"]
    assert (by_id["t_one:0"].history, by_id["t_one:0"].document) == ([], QUARTERBACK)
    assert by_id["t_one:4"].document == PINK  # its Personal Knowledge part has no text; FS2 has
    summary = rows_summary
    assert (summary["kept"], summary["skipped_opening"], summary["skipped_personal"], summary["skipped_no_source"]) == (
        7,
        0,
        0,
        4,
    )  # t_one:2 and t_two:0 name only Personal Knowledge
    _, only_opening = rows_of("topicalchat", "valid_freq", TOPICALCHAT, keep_opening=True)
    assert (only_opening["kept"], only_opening["skipped_opening"], only_opening["skipped_personal"]) == (6, 0, 3)


@pytest.mark.parametrize(
    "history_turns, expected",
    [
        (0, []),
        (1, ["Pink is my favourite colour."]),
        (
            3,
            [
                "I played quarterback in school.",
                "The article says the Redskins won on Sunday.",
                "Pink is my favourite colour.",
            ],
        ),
        (
            None,
            [
                "Hi! Are you a football fan?",
                "I am. The quarterback leads the offense.",
                "I played quarterback in school.",
                "The article says the Redskins won on Sunday.",
                "Pink is my favourite colour.",
            ],
        ),
    ],
)
def test_history_is_the_last_turns_before_the_response(history_turns, expected):
    rows, _ = rows_of("topicalchat", "valid_freq", TOPICALCHAT, history_turns=history_turns)
    assert next(row for row in rows if row.id == "t_one:5").history == expected
    first = rows_of("multidoc2dial", "validation", MULTIDOC2DIAL, history_turns=history_turns)[0][0]
    assert first.history == ([] if history_turns == 0 else ["Hi, what should I plan for my survivors?"])


def test_faithdial_rows_from_the_released_json():
    rows, rows_summary = rows_of("faithdial", "valid", FAITHDIAL)
    dialogues = json.loads((FAITHDIAL / "valid.json").read_text())
    madonna = dialogues[1]["utterances"][0]
    assert rows == [
        Row(
            id="0:0",
            document="Gardening is the practice of growing and cultivating plants as part of horticulture.",
            history=["I love gardening, do you?"],
            response="As a bot I can't garden, but I know it is the practice of growing and cultivating plants. "
            "What do you grow?",
            extras={
                "dialog_idx": 0,
                "turn": 0,
                "speaker": "Wizard",
                "original_response": "I do! I grow tomatoes every summer in my backyard.",
                "BEGIN": ["Hallucination"],
                "VRM": ["Disclosure", "Question"],
            },
        ),
        Row(
            id="0:1",
            document="Gardening is the practice of growing and cultivating plants as part of horticulture.",
            history=[
                "As a bot I can't garden, but I know it is the practice of growing and cultivating plants. "
                "What do you grow?",
                "Mostly roses. Is gardening part of anything bigger?",
            ],
            response="Yes, gardening is part of horticulture.",
            extras={
                "dialog_idx": 0,
                "turn": 1,
                "speaker": "Wizard",
                "original_response": None,
                "BEGIN": ["Entailment"],
                "VRM": ["Edification"],
            },
        ),
        Row(
            id="1:0",
            document=madonna["knowledge"],
            history=madonna["history"][-2:],
            response=madonna["response"],
            extras={
                "dialog_idx": 1,
                "turn": 0,
                "speaker": "Wizard",
                "original_response": madonna["original_response"],
                "BEGIN": ["Hallucination", "Entailment"],
                "VRM": ["Disclosure", "Question"],
            },
        ),
    ]
    assert rows_summary == {
        "corpus": "faithdial",
        "split": "valid",
        "source": str(FAITHDIAL / "valid.json"),
        "dialogues": 2,
        "turns": 4,
        "kept": 3,
        "skipped_no_knowledge": 1,
    }


def test_faithdial_reads_a_clone_of_the_hub_repository_and_the_hub_itself(tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    shutil.copy(FAITHDIAL / "valid.json", tmp_path / "data" / "valid.json")
    local, _ = rows_of("faithdial", "valid", FAITHDIAL)
    assert rows_of("faithdial", "valid", tmp_path)[0] == local

    import huggingface_hub

    calls = []

    def download(repo_id, filename, repo_type):
        calls.append((repo_id, filename, repo_type))
        return str(FAITHDIAL / "valid.json")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    assert rows_of("faithdial", "valid")[0] == local
    assert calls == [("McGill-NLP/FaithDial", "data/valid.json", "dataset")]


def test_faithdial_without_the_hub_asks_for_a_path(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(
        InputError,
        match=r"FaithDial test_topic_split: cannot get data/test_topic_split\.json from the "
        r"hub dataset McGill-NLP/FaithDial .*pass their folder as path \(--path\)",
    ):
        load_corpus("faithdial", "test_topic_split")


SSA = "Benefits Planner: Survivors | Planning For Your Survivors | Social Security Administration#1_0"
VA = "How to apply for VA health care | Veterans Affairs#1_0"


def test_multidoc2dial_agent_turns_grounded_in_their_sections():
    rows, rows_summary = rows_of("multidoc2dial", "validation", MULTIDOC2DIAL)
    turns = {
        dialogue["dial_id"]: {turn["turn_id"]: turn for turn in dialogue["turns"]}
        for dialogues in json.loads((MULTIDOC2DIAL / "multidoc2dial_dial_validation.json").read_text())[
            "dial_data"
        ].values()
        for dialogue in dialogues
    }

    def row(dial_id, turn_id, domain, document, history):
        turn = turns[dial_id][turn_id]
        return Row(
            id=f"{dial_id}:{turn_id}",
            document=document,
            history=history,
            response=turn["utterance"],
            extras={
                "dial_id": dial_id,
                "domain": domain,
                "doc_id": turn["references"][0]["doc_id"],
                "da": "respond_solution",
                "references": turn["references"],
                "role": "agent",
                "turn_id": turn_id,
            },
        )

    credits = (
        "You can earn up to four credits each year. In 2019 , you earn one credit for each $1,360 of wages or "
        "self - employment income."
    )
    plan = (
        "As you plan for the future , you'll want to think about what your family would need if you should die "
        "now. Social Security can help your family if you have earned enough Social Security credits through "
        "your work."
    )
    assert rows == [
        row("d_ssa_1", 2, "ssa", plan, ["Hi, what should I plan for my survivors?"]),
        row(
            "d_ssa_1",
            5,
            "ssa",
            credits + "\n" + plan,  # spans 5 and 6 share a section: it appears once
            ["Do you know how many credits you have?", "No. How many can I earn?"],
        ),
        row(
            "d_va_1",
            2,
            "va",
            "You can apply online. You can also apply in person at a VA medical center.\nHow To Apply",
            ["How do I apply for VA health care?"],
        ),
        row(
            "d_va_1",
            4,
            "va",
            "Call us at 877-222-8387 to apply by phone.",
            ["You can apply online.", "Can I apply by phone?"],
        ),
    ]
    assert rows[0].extras["doc_id"] == SSA and rows[2].extras["doc_id"] == VA
    assert rows_summary == {
        "corpus": "multidoc2dial",
        "split": "validation",
        "source": str(MULTIDOC2DIAL / "multidoc2dial_dial_validation.json"),
        "dialogues": 2,
        "turns": 6,
        "kept": 4,
        "skipped_follow_up": 1,  # d_ssa_1 turn 3 follows an agent turn
        "skipped_no_grounding": 1,  # d_ssa_1 turn 7 is respond_no_solution
    }


def test_each_load_logs_a_one_line_summary(caplog):
    with caplog.at_level(logging.INFO, logger="faithkit.data.corpora"):
        load_corpus("topicalchat", "valid_freq", TOPICALCHAT)
    assert caplog.messages == [
        f"topicalchat valid_freq: kept 5 of 11 turns (skipped: 2 opening, 2 personal, 2 no_source) "
        f"from {TOPICALCHAT / 'conversations' / 'valid_freq.json'}"
    ]


@pytest.mark.parametrize("file_format, name", [("jsonl", "rows.jsonl"), ("parquet", "rows.parquet"), ("arrow", "rows")])
@pytest.mark.parametrize(
    "corpus, split, path",
    [
        ("topicalchat", "valid_freq", TOPICALCHAT),
        ("faithdial", "valid", FAITHDIAL),
        ("multidoc2dial", "validation", MULTIDOC2DIAL),
    ],
)
def test_export_round_trips_through_read_rows(tmp_path, corpus, split, path, file_format, name):
    output = tmp_path / "out" / name
    summary = export_corpus(corpus, split, output, path=path, history_turns=1, file_format=file_format)
    rows, rows_summary = rows_of(corpus, split, path, history_turns=1)
    assert summary == {**rows_summary, "output": str(output), "format": file_format}
    assert list(read_rows(output)) == [
        Row(
            id=row.id,
            document=row.document,
            history=row.history,
            response=row.response,
            extras={"gold": row.response, **row.extras},
        )
        for row in rows
    ]
    if file_format == "jsonl":
        first = json.loads(output.read_text().splitlines()[0])
        assert list(first)[:5] == ["id", "document", "history", "response", "gold"]
    if file_format == "arrow":  # a saved dataset keeps its features and its summary
        saved = datasets.load_from_disk(str(output))
        assert saved.features == load_corpus(corpus, split, path, history_turns=1).features
        assert corpus_summary(saved) == rows_summary
    assert not output.with_name(name + ".partial").exists()


def test_corpora_are_datasets_with_declared_features():
    string, strings = datasets.Value("string"), datasets.List(datasets.Value("string"))
    common = {"id": string, "document": string, "history": strings, "response": string, "gold": string}
    dataset = load_corpus("topicalchat", "valid_freq", TOPICALCHAT)
    assert isinstance(dataset, datasets.Dataset) and dataset.num_rows == 5
    assert dataset.features == datasets.Features(
        {
            **common,
            "conversation_id": string,
            "turn": datasets.Value("int64"),
            "config": string,
            "agent": string,
            "sentiment": string,
            "knowledge_source": strings,
            "turn_rating": string,
            "entities": strings,
        }
    )
    faithdial = load_corpus("faithdial", "valid", FAITHDIAL).features
    assert faithdial["original_response"] == string and faithdial["BEGIN"] == strings
    references = load_corpus("multidoc2dial", "validation", MULTIDOC2DIAL).features["references"]
    assert references == datasets.List({"id_sp": string, "label": string, "doc_id": string})


def test_export_keeps_line_separators_inside_their_record(tmp_path, monkeypatch):
    """U+2028 and NEL split a line for str.splitlines, which read_rows uses; exported records stay one line each."""
    (tmp_path / "data").mkdir()
    dialogues = json.loads((FAITHDIAL / "valid.json").read_text())
    dialogues[0]["utterances"][0]["knowledge"] = "Line one\u2028line two\x85end — ok"
    (tmp_path / "data" / "valid.json").write_text(json.dumps(dialogues, ensure_ascii=False), encoding="utf-8")
    export_corpus("faithdial", "valid", tmp_path / "rows.jsonl", path=tmp_path)
    assert next(iter(read_rows(tmp_path / "rows.jsonl"))).document == "Line one\u2028line two\x85end — ok"


def test_export_to_an_unwritable_place_is_an_output_error(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(OutputError, match=r"cannot write .*file/rows\.jsonl"):
        export_corpus("faithdial", "valid", tmp_path / "file" / "rows.jsonl", path=FAITHDIAL)


def test_unknown_corpus_split_option_or_history_name_the_choices():
    with pytest.raises(ConfigError, match=r"unknown corpus 'wow'; choose one of topicalchat, faithdial, multidoc2dial"):
        load_corpus("wow", "train")
    with pytest.raises(
        ConfigError,
        match=r"topicalchat has no split 'valid'; choose one of train, valid_freq, "
        r"valid_rare, test_freq, test_rare",
    ):
        load_corpus("topicalchat", "valid")
    with pytest.raises(ConfigError, match=r"multidoc2dial has no split 'valid'; choose one of train, validation, test"):
        load_corpus("multidoc2dial", "valid")
    with pytest.raises(ConfigError, match=r"faithdial has no option keep_personal; its options are none"):
        load_corpus("faithdial", "valid", FAITHDIAL, keep_personal=True)
    with pytest.raises(
        ConfigError,
        match=r"topicalchat has no option keep_first; its options are keep_opening, "
        r"keep_personal",
    ):
        load_corpus("topicalchat", "valid_freq", TOPICALCHAT, keep_first=True)
    with pytest.raises(ConfigError, match=r"history_turns must be a whole number >= 0"):
        load_corpus("topicalchat", "valid_freq", TOPICALCHAT, history_turns=-1)
    assert set(CORPORA) == {"topicalchat", "faithdial", "multidoc2dial"}


def test_a_missing_file_names_it_and_where_to_get_it(tmp_path):
    with pytest.raises(
        InputError,
        match=rf"^{tmp_path}/valid_rare\.json not found: expected the Topical-Chat valid_rare "
        r"conversations\. Get it from https://github\.com/alexa/Topical-Chat$",
    ):
        load_corpus("topicalchat", "valid_rare", tmp_path)
    with pytest.raises(
        InputError,
        match=rf"{tmp_path}/multidoc2dial_dial_train\.json not found.*"
        rf"https://doc2dial\.github\.io/multidoc2dial/file/multidoc2dial\.zip",
    ):
        load_corpus("multidoc2dial", "train", tmp_path)
    with pytest.raises(InputError, match=rf"{tmp_path}/test\.json not found.*McGill-NLP/FaithDial"):
        load_corpus("faithdial", "test", tmp_path)
    shutil.copy(TOPICALCHAT / "conversations" / "valid_freq.json", tmp_path / "valid_freq.json")
    shutil.copy(
        TOPICALCHAT / "reading_sets" / "pre-build" / "valid_freq.json", tmp_path / "reading_set_valid_freq.json"
    )
    with pytest.raises(InputError, match=rf"{tmp_path}/wiki\.json not found: expected the Topical-Chat Wikipedia"):
        load_corpus("topicalchat", "valid_freq", tmp_path)


def test_malformed_files_are_input_errors_naming_the_file(tmp_path):
    (tmp_path / "valid.json").write_text('[{"utterances": [')
    with pytest.raises(InputError, match=rf"^{tmp_path}/valid\.json is not valid JSON \(Expecting value: line 1"):
        load_corpus("faithdial", "valid", tmp_path)
    (tmp_path / "valid.json").write_text('{"utterances": []}')
    with pytest.raises(InputError, match=r"valid\.json holds a JSON dict, not a list"):
        load_corpus("faithdial", "valid", tmp_path)
    (tmp_path / "valid.json").write_text('[{"turns": []}]')
    with pytest.raises(InputError, match=r"valid\.json: missing field 'utterances': expected FaithDial dialogues"):
        load_corpus("faithdial", "valid", tmp_path)

    shutil.copy(MULTIDOC2DIAL / "multidoc2dial_dial_validation.json", tmp_path)
    documents = json.loads((MULTIDOC2DIAL / "multidoc2dial_doc.json").read_text())
    del documents["doc_data"]["va"][VA]["spans"]["4"]
    (tmp_path / "multidoc2dial_doc.json").write_text(json.dumps(documents))
    with pytest.raises(
        InputError,
        match=r"dialogue d_va_1 turn 4 references span 4 of document 'How to apply for VA "
        r"health care \| Veterans Affairs#1_0', which multidoc2dial_doc\.json does not",
    ):
        load_corpus("multidoc2dial", "validation", tmp_path)

    shutil.copy(TOPICALCHAT / "conversations" / "valid_freq.json", tmp_path / "valid_freq.json")
    reading_sets = json.loads((TOPICALCHAT / "reading_sets" / "pre-build" / "valid_freq.json").read_text())
    wiki = json.loads((TOPICALCHAT / "src" / "wiki" / "wiki.json").read_text())
    del wiki["summarized_wiki_lead_section"][FOOTBALL]
    (tmp_path / "wiki.json").write_text(json.dumps(wiki))
    (tmp_path / "reading_set_valid_freq.json").write_text(json.dumps(reading_sets))
    with pytest.raises(InputError, match=r"summarized_wiki_lead_section id 201 is not in wiki\.json"):
        load_corpus("topicalchat", "valid_freq", tmp_path)
    del reading_sets["t_two"]
    (tmp_path / "reading_set_valid_freq.json").write_text(json.dumps(reading_sets))
    shutil.copy(TOPICALCHAT / "src" / "wiki" / "wiki.json", tmp_path / "wiki.json")
    with pytest.raises(InputError, match=r"reading_set_valid_freq\.json has no reading set for conversation t_two"):
        load_corpus("topicalchat", "valid_freq", tmp_path)


@pytest.mark.parametrize(
    "split, kept, personal, no_source",
    [
        ("valid_freq", 7359, 2959, 824),
        ("valid_rare", 7441, 2936, 776),
    ],
)
def test_topicalchat_on_the_shared_data(data_dir, split, kept, personal, no_source):
    """Counts checked by an independent pass over the raw files (every factual section there has a Wikipedia lead)."""
    folder = data_dir / "topicalchat"
    conversations = json.loads((folder / f"{split}.json").read_text())
    reading_sets = json.loads((folder / f"reading_set_{split}.json").read_text())
    reasons = []
    for conversation_id, conversation in conversations.items():
        for index, turn in enumerate(conversation["content"]):
            named = set(turn["knowledge_source"])
            sections = set(reading_sets[conversation_id][turn["agent"]])
            reasons.append(
                "opening"
                if index == 0
                else "personal"
                if "Personal Knowledge" in named
                else "kept"
                if named & sections
                else "no_source"
            )
    assert [reasons.count(r) for r in ("kept", "opening", "personal", "no_source")] == [kept, 539, personal, no_source]

    rows, rows_summary = rows_of("topicalchat", split)
    assert len(rows) == kept
    assert {
        k: rows_summary[k] for k in ("turns", "kept", "skipped_opening", "skipped_personal", "skipped_no_source")
    } == {
        "turns": len(reasons),
        "kept": kept,
        "skipped_opening": 539,
        "skipped_personal": personal,
        "skipped_no_source": no_source,
    }
    row = rows[0]
    conversation_id, index = row.id.rsplit(":", 1)
    index = int(index)
    turn = conversations[conversation_id]["content"][index]
    wiki = json.loads((folder / "wiki.json").read_text())
    texts = {section_id: text for kind in wiki.values() for text, section_id in kind.items()}
    sections = reading_sets[conversation_id][turn["agent"]]
    expected = [
        texts[section.get("shortened_wiki_lead_section", section.get("summarized_wiki_lead_section"))]
        for section in (sections[name] for name in turn["knowledge_source"] if name in sections)
    ]
    assert row.document == "\n".join(expected) and row.response == turn["message"]
    assert row.history == [t["message"] for t in conversations[conversation_id]["content"][max(index - 2, 0) : index]]
