"""faithkit annotate: building a blind task (from two files or two sweep cells), the report's numbers against
independent computations and published examples, blinding, and the answer files the report refuses.

The browser side (keyboard, storage, export) is tested in test_annotate_browser.py.
"""

import csv
import itertools
import json
import math
import random
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from faithkit.annotate import (
    ANSWERS,
    DIMENSIONS,
    System,
    build_task,
    read_annotations,
    read_key,
    summarize,
    sweep_cells,
    sweep_system,
)
from faithkit.annotate.agreement import fleiss_kappa, krippendorff_alpha
from faithkit.errors import InputError
from faithkit.stats import bootstrap_interval, correlation_interval
from faithkit.metrics.lexical import knowledge_precision
from tests.cli.helpers import run_main, write_jsonl
from tests.conftest import save_gpt2_folder

DOCUMENTS = [
    "The Eiffel Tower is 330 metres tall and was finished in 1889.",
    "Emperor penguins live only in Antarctica.",
    "Jazz originated in New Orleans in the late 19th century.",
]


def generate_output(path: Path, responses: list[str], **extra) -> Path:
    """A ``faithkit generate`` output: one record per row, same documents and histories in every file."""
    return write_jsonl(
        path,
        [
            {
                "id": f"row{i}",
                "document": DOCUMENTS[i % 3],
                "history": [f"Tell me more ({i})."],
                "gold": "gold",
                "response": text,
                **extra,
            }
            for i, text in enumerate(responses)
        ],
    )


@pytest.fixture
def two_files(tmp_path):
    a = generate_output(tmp_path / "greedy.jsonl", [f"It is 330 metres tall ({i})." for i in range(30)])
    b = generate_output(
        tmp_path / "pmidecode.jsonl",
        [f"It is 330 metres tall ({i})." if i % 5 == 0 else f"They built it in 1925 ({i})." for i in range(30)],
    )
    return a, b


# ---- building a task ---------------------------------------------------------------------------


def test_build_samples_differing_rows_with_balanced_seeded_sides(two_files, tmp_path):
    a, b = map(System.from_file, two_files)
    task = build_task(a, b, tmp_path / "task", contexts=10, seed=3)
    key = read_key(tmp_path / "task")
    rows = [entry["row"] for entry in key["items"]]
    assert len(rows) == len(set(rows)) == 10
    assert all(int(row[3:]) % 5 for row in rows)  # rows 0, 5, 10 … answer alike and are never sampled
    assert key["shared_rows"] == 30 and key["differing_rows"] == 24
    assert sorted(entry["sides"][0] for entry in key["items"]) == ["a"] * 5 + ["b"] * 5
    for item, entry in zip(task.public["items"], key["items"]):
        systems = {"a": a, "b": b}
        assert item["responses"] == [systems[side].records[entry["row"]]["response"] for side in entry["sides"]]
        assert item["document"] == a.records[entry["row"]]["document"]
        for side in ("a", "b"):
            expected = knowledge_precision(item["document"], systems[side].records[entry["row"]]["response"])
            assert entry["scores"][side]["knowledge_precision"] == expected
    again = build_task(a, b, tmp_path / "again", contexts=10, seed=3)
    assert again.key == key and again.public == task.public
    other = build_task(a, b, tmp_path / "other", contexts=10, seed=4)
    assert other.id != task.id


def test_too_few_differing_rows_gives_all_of_them_with_a_warning(two_files, tmp_path, caplog):
    task = build_task(*map(System.from_file, two_files), tmp_path / "task", contexts=100)
    assert len(task.key["items"]) == 24
    assert "only 24 of 30 shared rows have different responses; the task has 24 items, not 100" in caplog.text
    caplog.clear()
    a = generate_output(tmp_path / "a.jsonl", ["Yes.", "No."])
    b = generate_output(tmp_path / "b.jsonl", ["No.", "Yes."])
    build_task(System.from_file(a), System.from_file(b), tmp_path / "all", contexts=50)
    assert caplog.messages == ["all 2 shared rows have different responses; the task has 2 items, not 50 (--contexts)"]


def test_items_flag_responses_cut_mid_sentence_and_drop_blank_turns(tmp_path):
    responses = ["It is 330 metres tall.", "It was finished in", "Penguins? Only in Antarctica!", 'Jazz began in "New']

    def system(name, texts):
        return System.from_file(
            write_jsonl(
                tmp_path / f"{name}.jsonl",
                [
                    {
                        "id": f"r{i}",
                        "document": DOCUMENTS[0],
                        "history": ["", "Tell me more."] if i else [" "],
                        "response": text,
                    }
                    for i, text in enumerate(texts)
                ],
            )
        )

    task = build_task(system("a", responses), system("b", ["Other."] * 4), tmp_path / "task", contexts=4)
    by_row = {entry["row"]: item for entry, item in zip(task.key["items"], task.public["items"])}
    assert {row: item["cut"][item["responses"].index(responses[int(row[1])])] for row, item in by_row.items()} == {
        "r0": False,
        "r1": True,
        "r2": False,
        "r3": True,
    }
    assert all(item["cut"][item["responses"].index("Other.")] is False for item in by_row.values())
    assert by_row["r0"]["history"] == [] and by_row["r1"]["history"] == ["Tell me more."]


def test_blinding_the_page_holds_no_system_name_and_does_not_depend_on_them(two_files, tmp_path):
    renamed = [shutil.copy(path, tmp_path / name) for path, name in zip(two_files, ("sysX.jsonl", "sysY.jsonl"))]
    first = build_task(*map(System.from_file, two_files), tmp_path / "task", contexts=10)
    second = build_task(*map(System.from_file, renamed), tmp_path / "renamed", contexts=10)
    page = (first.out / "annotate.html").read_text()
    assert page == (second.out / "annotate.html").read_text()  # the names do not reach the page at all
    for secret in ("greedy", "pmidecode", str(tmp_path), "sides", "knowledge_precision", "seed", "key.json"):
        assert secret not in page
    data = json.loads(re.search(r'<script id="task-data" type="application/json">(.*?)</script>', page, re.S).group(1))
    assert {key for item in data["items"] for key in item} == {"item", "document", "history", "responses", "cut"}


def test_texts_cannot_break_out_of_the_page(tmp_path):
    attack = "</script><script>alert(1)</script> & <!--"
    a = generate_output(tmp_path / "a.jsonl", [attack, "plain"])
    b = generate_output(tmp_path / "b.jsonl", ["other", "plain too"])
    task = build_task(System.from_file(a), System.from_file(b), tmp_path / "task")
    page = (task.out / "annotate.html").read_text()
    assert attack not in page and page.count("</script>") == 2  # the data element's and the script's own
    data = re.search(r'<script id="task-data" type="application/json">(.*?)</script>', page, re.S).group(1)
    assert json.loads(data) == task.public


@pytest.mark.slow  # a whole sweep first: 3 s of CPU
def test_building_from_a_real_sweep(tmp_path, tiny_gpt2, gpt2_tokenizer):
    """A sweep of two tiny random GPT-2s: cells by their sweep.csv names, PMI-FAITH from its scores file."""
    import torch

    for name, seed in (("generator", None), ("judge", 1)):
        model = tiny_gpt2
        if seed is not None:
            from transformers import GPT2LMHeadModel

            torch.manual_seed(seed)
            model = GPT2LMHeadModel(tiny_gpt2.config).eval()
        save_gpt2_folder(model, gpt2_tokenizer, tmp_path / name)
    rows = generate_output(tmp_path / "dev.jsonl", ["gold"] * 6)
    assert (
        run_main(
            "sweep",
            "--generator",
            tmp_path / "generator",
            "--scoring-model",
            tmp_path / "judge",
            "--input",
            rows,
            "--out",
            tmp_path / "sweep",
            "--alpha",
            "1",
            "--top-p",
            "0.6",
            "--max-new-tokens",
            "5",
            "--batch-size",
            "3",
        )
        == 0
    )
    cells = sweep_cells(tmp_path / "sweep")
    with open(tmp_path / "sweep" / "sweep.csv") as handle:
        assert len(cells) == len(list(csv.DictReader(handle))) == 2
    assert all(path.is_file() for path in cells.values())
    baseline, pmi = cells
    code = run_main(
        "annotate", "build", "--sweep", tmp_path / "sweep", "--a", baseline, "--b", pmi, "--out", tmp_path / "task"
    )
    assert code == 0
    key = read_key(tmp_path / "task")
    assert key["systems"]["a"]["name"] == baseline and key["items"]
    scores = {
        (r["cell"], r["row"]): r.get("pmi")
        for r in map(json.loads, (tmp_path / "sweep" / "scores.jsonl").read_text().splitlines())
    }
    for entry in key["items"]:
        for side, cell in (("a", baseline), ("b", pmi)):
            if scores[cell, entry["row"]] is not None:
                assert entry["scores"][side]["pmi_faith"] == scores[cell, entry["row"]]
    with pytest.raises(InputError, match=re.escape(f"has no cell 'a9_p9'; its cells are {', '.join(cells)}")):
        sweep_system(tmp_path / "sweep", "a9_p9")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--a-file", "A", "--b-file", "B", "--sweep", "S", "--a", "x", "--b", "y"], "not both"),
        (["--sweep", "S", "--a", "x"], "--sweep needs --a CELL and --b CELL"),
        (["--a-file", "A"], "name the two systems"),
        (["--sweep", "S", "--a", "x", "--b", "y"], "S has no sweep.csv"),
    ],
)
def test_build_errors(argv, message, tmp_path, capsys, monkeypatch):
    """Files A and B and a folder S exist (their paths pass), so the options' combination is what is refused."""
    monkeypatch.chdir(tmp_path)
    generate_output(tmp_path / "A", ["It is tall."])
    generate_output(tmp_path / "B", ["It is short."])
    (tmp_path / "S").mkdir()
    assert run_main("annotate", "build", *argv, "--out", tmp_path / "task") == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: ") and message in error and len(error.splitlines()) == 1
    assert not (tmp_path / "task").exists()


def test_a_missing_responses_file_is_named(tmp_path):
    """The command line refuses a missing --a-file as it parses it (tests/cli/test_bad_paths.py); a library caller,
    or a sweep that lost a cell's file, still gets the file named."""
    with pytest.raises(InputError, match=re.escape(f"responses file not found: {tmp_path / 'missing.jsonl'}")):
        System.from_file(tmp_path / "missing.jsonl")


def test_build_refuses_an_out_folder_that_holds_its_inputs(two_files, tmp_path, capsys):
    assert run_main("annotate", "build", "--a-file", two_files[0], "--b-file", two_files[1], "--out", tmp_path) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: --out {tmp_path} holds the input {two_files[0]}; the results would be written beside (or, with "
        f"--restart, over) it: choose another --out, or move the input out"
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["greedy.jsonl", "pmidecode.jsonl"]


def test_files_of_other_rows_and_identical_systems_are_refused(two_files, tmp_path):
    a = System.from_file(two_files[0])
    other = write_jsonl(
        tmp_path / "other.jsonl", [{"id": "row1", "document": "Another document.", "history": [], "response": "x"}]
    )
    with pytest.raises(InputError, match="row 'row1' has another document or history"):
        build_task(a, System.from_file(other), tmp_path / "task")
    with pytest.raises(InputError, match="give the same response to all 30 shared rows"):
        build_task(a, System.from_file(two_files[0], name="copy"), tmp_path / "task")


def test_a_folder_holding_another_task_is_not_overwritten(two_files, tmp_path):
    a, b = map(System.from_file, two_files)
    build_task(a, b, tmp_path / "task", seed=1)
    build_task(a, b, tmp_path / "task", seed=1)  # the same task again: fine
    with pytest.raises(Exception, match="already holds annotation task"):
        build_task(a, b, tmp_path / "task", seed=2)


# ---- the report against independent computations ------------------------------------------------


def simulate(key: dict, accuracy: tuple[float, ...], seed: int = 0) -> np.ndarray:
    """Annotators of known reliability: each copies a hidden true rating with its probability, else answers at
    random. Returns ratings[annotator][item][system][dimension] as answer names (system 0 = a)."""
    rng = random.Random(seed)
    truth = [[[rng.choice(ANSWERS) for _ in DIMENSIONS] for _ in "ab"] for _ in key["items"]]
    return [
        [[[t if rng.random() < p else rng.choice(ANSWERS) for t in system] for system in item] for item in truth]
        for p in accuracy
    ]


def write_exports(folder: Path, key: dict, ratings, names=("ann", "bob", "cy")) -> list[Path]:
    """What the page exports: answers by item and page side (the key says which system each side shows)."""
    paths = []
    for name, table in zip(names, ratings):
        answers = {
            entry["item"]: [dict(zip(DIMENSIONS, table[index]["ab".index(side)])) for side in entry["sides"]]
            for index, entry in enumerate(key["items"])
        }
        path = folder / f"answers-{name}.json"
        path.write_text(
            json.dumps(
                {
                    "format": "faithkit-annotation-answers",
                    "version": 1,
                    "task": key["task"],
                    "annotator": name,
                    "answers": answers,
                }
            )
        )
        paths.append(path)
    return paths


def reference_alpha(units: list[list[int]], level: str) -> float:
    """Krippendorff's alpha from its pairwise definition: D_o averages, within each unit, the squared difference of
    every ordered pair of values (weight 1/(m_u - 1)); D_e that of every ordered pair of all pairable values."""
    units = [[v for v in unit if v is not None] for unit in units]
    units = [unit for unit in units if len(unit) >= 2]
    values = [v for unit in units for v in unit]
    n = len(values)
    counts = {v: values.count(v) for v in set(values)}

    def delta(c, k):
        if level == "nominal":
            return float(c != k)
        if level == "interval":
            return float((c - k) ** 2)
        low, high = min(c, k), max(c, k)
        return (sum(counts.get(g, 0) for g in range(low, high + 1)) - (counts.get(c, 0) + counts.get(k, 0)) / 2) ** 2

    observed = sum(delta(x, y) / (len(unit) - 1) for unit in units for x, y in itertools.permutations(unit, 2)) / n
    expected = sum(delta(x, y) for x, y in itertools.permutations(values, 2)) / (n * (n - 1))
    return 1 - observed / expected


def reference_fleiss(units: list[list[int]], categories: int) -> float:
    raters = len(units[0])
    p = [sum(unit.count(c) for unit in units) / (len(units) * raters) for c in range(categories)]
    agreement = [
        (sum(unit.count(c) ** 2 for c in range(categories)) - raters) / (raters * (raters - 1)) for unit in units
    ]
    chance = sum(share**2 for share in p)
    return (sum(agreement) / len(agreement) - chance) / (1 - chance)


@pytest.fixture
def task_key(two_files, tmp_path):
    build_task(*map(System.from_file, two_files), tmp_path / "task", contexts=20, seed=5)
    return read_key(tmp_path / "task")


def test_report_reproduces_shares_wins_and_agreement_of_simulated_annotators(task_key, tmp_path):
    ratings = simulate(task_key, accuracy=(0.9, 0.75, 0.5))
    paths = write_exports(tmp_path, task_key, ratings)
    summary = summarize(read_annotations(task_key, paths), resamples=200)
    level = {"agree": 2, "neutral": 1, "disagree": 0}
    items = range(len(task_key["items"]))
    for column, dimension in enumerate(DIMENSIONS):
        for system in (0, 1):
            given = [ratings[a][i][system][column] for a in range(3) for i in items]
            row = next(r for r in summary["shares"] if r["dimension"] == dimension and r["system"] == "ab"[system])
            for answer in ANSWERS:
                assert abs(row[answer] - given.count(answer) / len(given)) < 1e-9
                assert row[f"{answer}_ci"][0] <= row[answer] <= row[f"{answer}_ci"][1]
        pairs = [(level[ratings[a][i][0][column]], level[ratings[a][i][1][column]]) for a in range(3) for i in items]
        wins = next(r for r in summary["wins"] if r["dimension"] == dimension)
        assert abs(wins["a_wins"] - sum(x > y for x, y in pairs) / len(pairs)) < 1e-9
        assert abs(wins["ties"] - sum(x == y for x, y in pairs) / len(pairs)) < 1e-9
        assert abs(wins["b_wins"] - sum(x < y for x, y in pairs) / len(pairs)) < 1e-9
        units = [[ANSWERS.index(ratings[a][i][system][column]) for a in range(3)] for i in items for system in (0, 1)]
        agreement = next(r for r in summary["agreement"] if r["dimension"] == dimension)
        assert abs(agreement["krippendorff_alpha"] - reference_alpha(units, "ordinal")) < 1e-9
        assert abs(agreement["fleiss_kappa"] - reference_fleiss(units, 3)) < 1e-9
    # the known reliabilities show: the simulated annotators agree clearly above chance, short of perfectly
    assert all(0.2 < r["krippendorff_alpha"] < 0.9 for r in summary["agreement"])


def test_perfect_and_chance_annotators():
    perfect = [[0, 0, 0], [1, 1, 1], [2, 2, 2], [0, 0, 0]]
    assert krippendorff_alpha(perfect, 3) == 1.0 and fleiss_kappa(perfect, 3) == 1.0
    assert math.isnan(krippendorff_alpha([[1, 1], [1, 1]], 3))  # no disagreement possible: undefined
    rng = np.random.default_rng(0)
    noise = rng.integers(3, size=(3000, 3))
    assert abs(krippendorff_alpha(noise, 3)) < 0.03 and abs(fleiss_kappa(noise, 3)) < 0.03


def test_alpha_and_kappa_recover_the_known_reliability_of_simulated_annotators():
    """Annotators who copy a uniform true rating with probability p_i and else answer uniformly at random agree
    beyond chance, pair by pair, by p_i * p_j (unless both copy, their two values are independent with the
    marginals' distribution, whatever the metric), so alpha and kappa tend to the mean of p_i * p_j: 0.5 here."""
    rng = np.random.default_rng(0)
    accuracy = np.array([0.9, 0.75, 0.5])
    truth = rng.integers(3, size=(4000, 1))
    ratings = np.where(rng.random((4000, 3)) < accuracy, truth, rng.integers(3, size=(4000, 3)))
    expected = np.mean([accuracy[i] * accuracy[j] for i, j in itertools.combinations(range(3), 2)])
    for level in ("nominal", "ordinal", "interval"):
        assert abs(krippendorff_alpha(ratings, 3, level) - expected) < 0.03
    assert abs(fleiss_kappa(ratings, 3) - expected) < 0.03


def test_alpha_reproduces_krippendorffs_published_examples():
    """Krippendorff (2011), 'Computing Krippendorff's alpha-reliability': 4 observers, 12 units, values 1-5 with gaps
    (nominal 0.743, ordinal 0.815, interval 0.849); and the 3-coder example of 15 units (nominal 0.691, interval
    0.811), as the krippendorff package's tests use them."""
    x = None
    observers = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, x, x, x],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, x, 3],
        [x, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, x],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, x],
    ]
    units = [[v - 1 if v else None for v in unit] for unit in zip(*observers)]
    table = [[math.nan if v is None else v for v in unit] for unit in units]
    for level, published in (("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)):
        assert round(krippendorff_alpha(table, 5, level), 3) == published
        assert abs(krippendorff_alpha(table, 5, level) - reference_alpha(units, level)) < 1e-12
    coders = [
        [x, x, x, x, x, 3, 4, 1, 2, 1, 1, 3, 3, x, 3],
        [1, x, 2, 1, 3, 3, 4, 3, x, x, x, x, x, x, x],
        [x, x, 2, 1, 3, 4, 4, x, 2, 1, 1, 3, 3, x, 4],
    ]
    table = [[math.nan if v is None else v - 1 for v in unit] for unit in zip(*coders)]
    assert round(krippendorff_alpha(table, 4, "nominal"), 6) == 0.691358
    assert round(krippendorff_alpha(table, 4, "interval"), 6) == 0.810845


def test_fleiss_kappa_reproduces_fleiss_worked_example():
    """The 10 subjects x 14 raters x 5 categories example of Fleiss' kappa's usual presentation: kappa 0.210."""
    counts = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    ratings = [[c for c, k in enumerate(row) for _ in range(k)] for row in counts]
    assert round(fleiss_kappa(ratings, 5), 3) == 0.210
    assert abs(fleiss_kappa(ratings, 5) - reference_fleiss(ratings, 5)) < 1e-12


def test_sign_test_and_correlation(task_key, tmp_path):
    """Everyone prefers a on faithfulness on every item: p = 2 * 0.5**20; human faithfulness follows the metric."""
    ratings = []
    for _ in range(2):
        ratings.append([[["agree", "agree", "agree"], ["disagree", "neutral", "agree"]] for _ in task_key["items"]])
    summary = summarize(
        read_annotations(task_key, write_exports(tmp_path, task_key, ratings, ("ann", "bob"))), resamples=200
    )
    faithfulness = summary["wins"][0]
    assert faithfulness["a_wins"] == 1.0 and faithfulness["sign_test"]["a_better"] == 20
    assert faithfulness["sign_test"]["p"] == pytest.approx(2 * 0.5**20)
    grammar = summary["wins"][2]
    assert grammar["ties"] == 1.0 and grammar["sign_test"]["p"] == 1.0
    correlation = next(r for r in summary["correlations"] if r["measure"] == "knowledge_precision")
    human = [2.0, 0.0] * 20
    metric = [entry["scores"][side]["knowledge_precision"] for entry in task_key["items"] for side in "ab"]
    from scipy.stats import spearmanr

    assert correlation["spearman"] == pytest.approx(spearmanr(metric, human)[0])
    assert correlation["responses"] == 40
    assert correlation["spearman_ci"] == correlation_interval(correlation["spearman"], 40)


def test_with_one_annotator_the_report_says_why_agreement_is_not_shown(task_key, tmp_path, capsys):
    (path,) = write_exports(tmp_path, task_key, simulate(task_key, (0.9,)))
    assert run_main("annotate", "report", tmp_path / "task", path, "--bootstrap", 100) == 0
    out = capsys.readouterr().out
    assert "Krippendorff's alpha (ordinal) | Fleiss' kappa |" not in out
    assert (
        "Agreement (Krippendorff's alpha, Fleiss' kappa) is not shown: it compares annotators, and there is one; "
        "give two or more annotators' exports to measure it."
    ) in out


def test_intervals_of_a_share_and_of_a_correlation_are_about_the_textbook_ones():
    hits = (np.random.default_rng(1).random(400) < 0.3).astype(float)
    counts = np.stack([hits, 1 - hits], axis=1)  # per item: one rating, a hit or not
    low, high = bootstrap_interval(counts, lambda sums: sums[0] / sums.sum(), resamples=2000, seed=0)
    share = hits.mean()
    half = 1.96 * math.sqrt(share * (1 - share) / len(hits))  # the normal approximation
    assert abs(low - (share - half)) < 0.01 and abs(high - (share + half)) < 0.01
    low, high = correlation_interval(0.5, 103)  # z = atanh(0.5) +- 1.96 * sqrt(1.125 / 100)
    assert (low, high) == pytest.approx(
        (
            math.tanh(math.atanh(0.5) - 1.96 * math.sqrt(0.01125)),
            math.tanh(math.atanh(0.5) + 1.96 * math.sqrt(0.01125)),
        ),
        abs=1e-4,
    )
    assert all(math.isnan(v) for v in correlation_interval(0.5, 3)) and correlation_interval(1.0, 10) == (1.0, 1.0)


def test_report_command_writes_markdown_csv_and_chart(task_key, tmp_path, capsys):
    paths = write_exports(tmp_path, task_key, simulate(task_key, (0.9, 0.8, 0.7)))
    assert run_main("annotate", "report", tmp_path / "task", *paths, "--bootstrap", 100) == 0
    out = capsys.readouterr().out
    assert "## Human evaluation: a = greedy, b = pmidecode" in out and "Krippendorff's alpha (ordinal)" in out
    assert "| human faithfulness vs | responses | Spearman [95%] |" in out and "knowledge precision" in out
    with open(tmp_path / "task" / "report.csv") as handle:
        rows = list(csv.DictReader(handle))
    share = next(
        r
        for r in rows
        if r["section"] == "shares"
        and r["dimension"] == "faithfulness"
        and r["system"] == "greedy"
        and r["statistic"] == "agree"
    )
    assert float(share["ci_low"]) <= float(share["value"]) <= float(share["ci_high"])
    assert {r["statistic"] for r in rows if r["section"] == "agreement"} == {
        "krippendorff_alpha_ordinal",
        "fleiss_kappa",
    }
    assert (tmp_path / "task" / "report.png").read_bytes()[:4] == b"\x89PNG"


# ---- answer files the report refuses ------------------------------------------------------------


def _edited(path: Path, edit) -> Path:
    export = json.loads(path.read_text())
    edit(export)
    path.write_text(json.dumps(export))
    return path


@pytest.mark.parametrize(
    "spoil, message",
    [
        (lambda e: e.update(task="0123456789ab"), "answers another task (0123456789ab, this one is"),
        (
            lambda e: e["answers"].pop("7"),
            "1 of 20 items are not fully answered (first: item 7, faithfulness of response 1)",
        ),
        (lambda e: e["answers"]["3"][1].pop("grammar"), "item 3, grammar of response 2"),
        (lambda e: e["answers"]["2"][0].update(relevance="maybe"), "item 2, response 1: relevance is 'maybe'"),
        (lambda e: e.update(annotator=" "), "has no annotator name"),
        (lambda e: e.update(format="other"), "is not an answers export"),
        (lambda e: e.pop("task"), ": task is missing (expected text); give the JSON files the annotators exported"),
        (lambda e: e.update(annotator=5), ": annotator is 5 where text is expected"),
        (lambda e: e.update(answers=[]), ": answers is [] where an object is expected"),
    ],
)
def test_bad_answer_files_are_one_error_line_naming_the_file(task_key, tmp_path, capsys, spoil, message):
    paths = write_exports(tmp_path, task_key, simulate(task_key, (0.9, 0.8)), ("ann", "bob"))
    _edited(paths[1], spoil)
    assert run_main("annotate", "report", tmp_path / "task", *paths) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"error: {paths[1]}") and message in error and len(error.splitlines()) == 1


def test_two_files_of_one_annotator_and_broken_json(task_key, tmp_path, capsys):
    ratings = simulate(task_key, (0.9, 0.8))
    first, second = write_exports(tmp_path, task_key, ratings, ("ann", "bob"))
    _edited(second, lambda e: e.update(annotator="Ann"))
    assert run_main("annotate", "report", tmp_path / "task", first, second) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {second} and {first} both come from annotator 'Ann'; give one "
        "export per annotator (the latest export holds all of their answers)"
    )
    second.write_text("{not json")
    assert run_main("annotate", "report", tmp_path / "task", first, second) == 2
    assert capsys.readouterr().err.startswith(f"error: {second} is not valid JSON")
    (tmp_path / "nowhere").mkdir()  # a folder without a task
    assert run_main("annotate", "report", tmp_path / "nowhere", first) == 2
    assert f"{tmp_path / 'nowhere' / 'key.json'} not found; give the --out folder" in capsys.readouterr().err


def test_help_says_what_it_writes(capsys):
    for action, says in (("build", "annotate.html"), ("report", "report.csv and report.png")):
        with pytest.raises(SystemExit):
            run_main("annotate", action, "--help")
        assert says in " ".join(capsys.readouterr().out.split())


# ---- rated responses as rows ------------------------------------------------------------------


def test_export_writes_one_row_per_rated_response_with_every_answer(two_files, task_key, tmp_path, capsys):
    ratings = simulate(task_key, (0.9, 0.6))
    paths = write_exports(tmp_path, task_key, ratings, ("ann", "bob"))
    output = tmp_path / "rated.jsonl"
    assert run_main("annotate", "export", tmp_path / "task", *paths, "--output", output) == 0
    rows = [json.loads(line) for line in output.read_text().splitlines()]
    systems = {"a": System.from_file(two_files[0]), "b": System.from_file(two_files[1])}
    assert len(rows) == 2 * len(task_key["items"])
    expected = []
    for index, entry in enumerate(task_key["items"]):
        for side in entry["sides"]:
            record = systems[side].records[entry["row"]]
            given = {
                dimension: {
                    name: ratings[number][index]["ab".index(side)][column] for number, name in enumerate(["ann", "bob"])
                }
                for column, dimension in enumerate(DIMENSIONS)
            }
            expected.append(
                {
                    "id": f"{task_key['task']}:{entry['item']}:{side}",
                    "row": entry["row"],
                    "task": task_key["task"],
                    "item": entry["item"],
                    "system": {"a": "greedy", "b": "pmidecode"}[side],
                    "document": record["document"],
                    "history": record["history"],
                    "response": record["response"],
                    "ratings": given,
                    "aggregate": {
                        dimension: {
                            **{answer: list(answers.values()).count(answer) for answer in ANSWERS},
                            "mean": sum({"agree": 2, "neutral": 1, "disagree": 0}[a] for a in answers.values()) / 2,
                        }
                        for dimension, answers in given.items()
                    },
                }
            )
    assert rows == expected


def test_export_refuses_a_page_of_another_task(task_key, tmp_path, capsys):
    paths = write_exports(tmp_path, task_key, simulate(task_key, (0.9,)), ("ann",))
    page = tmp_path / "task" / "annotate.html"
    page.write_text(page.read_text().replace(task_key["task"], "0123456789ab"))
    assert run_main("annotate", "export", tmp_path / "task", *paths, "--output", tmp_path / "rated.jsonl") == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {page} shows task 0123456789ab, its key.json is task {task_key['task']}; rebuild the task with "
        "'faithkit annotate build'"
    )
    page.write_text("<html></html>")
    assert run_main("annotate", "export", tmp_path / "task", *paths, "--output", tmp_path / "rated.jsonl") == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {page} is not a faithkit annotation page; rebuild the task with 'faithkit annotate build'"
    )
