"""A strategies sweep's report.html in a real browser (the headless Chromium of test_annotate_browser): what a reader
finds in the cell table, read from the page against sweep.csv and best.json, and the table sorted by a click."""

import csv
import json
from pathlib import Path

import pytest

from faithkit.cli import sweep as sweep_cli
from tests.test_annotate_browser import browser  # noqa: F401  (fixture)
from tests.test_sweep import models_dir, one_thread, parse, rows_file  # noqa: F401  (fixtures)

pytestmark = pytest.mark.slow


def test_report_shows_p_values_exclusions_and_alpha_zero_folded_into_plain(browser, models_dir, rows_file, tmp_path):
    from selenium.webdriver.common.by import By

    out = tmp_path / "sweep"
    args = parse(
        [
            "--generator",
            str(models_dir / "generator"),
            "--scoring-model",
            str(models_dir / "judge"),
            "--input",
            str(rows_file),
            "--out",
            str(out),
            "--strategies",
            "plain,pmi",
            "--alpha",
            "0,0.5",
            "--top-p",
            "1",
            "--max-new-tokens",
            "4",
            "--batch-size",
            "5",
            "--fluency-tolerance",
            "0",
            "--resamples",
            "200",
            "--metrics",
            "faith-judge,pmi-faith,lexical",
        ]
    )
    assert sweep_cli.run(args) == 0
    with open(out / "sweep.csv", newline="") as handle:
        table = {row["cell"]: row for row in csv.DictReader(handle)}
    best = json.loads((out / "best.json").read_text())
    assert list(table) == ["plain", "pmi_a0_p1", "pmi_a0.5_p1"] and table["pmi_a0_p1"]["decodes_as"] == "plain"
    assert float(table["pmi_a0.5_p1"]["fluency"]) < float(table["plain"]["fluency"])  # so the fluency bound is met
    driver, _ = browser
    driver.set_window_size(1366, 768)
    driver.get(Path(out / "report.html").resolve().as_uri())

    def line(cell):
        return driver.find_element(By.CSS_SELECTOR, f"#cells tr[data-cell='{cell}']")

    def shown(row, column):
        return row.find_element(By.CSS_SELECTOR, f"td[data-measure='{column}']").text

    rows = driver.find_elements(By.CSS_SELECTOR, "#cells tbody tr")
    assert [row.get_attribute("data-cell") for row in rows] == ["plain", "pmi_a0.5_p1"]  # alpha 0 has no line
    assert line("plain").find_element(By.TAG_NAME, "td").text == "plain greedy (= pmi greedy alpha=0 top_p=1)"
    pmi = line("pmi_a0.5_p1")
    heads = [head.text for head in driver.find_elements(By.CSS_SELECTOR, "#cells thead th")]
    measures = ("pmi_faith", "fluency", "faith_judge", "knowledge_precision", "bleu", "token_f1", "empty", "repeated")
    assert heads == ["cell", *[h for m in measures[:-2] for h in (m, f"{m} p")], "words", "empty", "empty p",
                     "repeated", "repeated p", "choice"]  # fmt: skip
    for measure in measures:  # every measure, with p against plain as sweep.csv has it, with its mark
        mine, theirs = float(table["pmi_a0.5_p1"][measure]), float(table["plain"][measure])
        p = float(table["pmi_a0.5_p1"][f"{measure}_p"])
        mark = "" if p >= 0.05 or mine == theirs else " ▲" if mine > theirs else " ▼"
        assert shown(pmi, f"{measure}_p") == f"{p:.3g}{mark}", measure
        assert shown(line("plain"), f"{measure}_p") == "baseline"
        assert shown(pmi, measure).startswith(f"{mine:.{2 if measure == 'bleu' else 3}f} [")
    # the judge is not the LM faith-judge's weights were fitted with: the choice fell back to PMI-FAITH, and says so
    assert best["faithfulness"] == "pmi_faith"
    assert driver.find_element(By.ID, "note").text == best["faithfulness_note"]
    assert best["faithfulness_note"].endswith("the choice maximises pmi_faith instead")
    assert "excluded" in pmi.get_attribute("class").split() and "pmi_a0.5_p1" not in best["eligible"]
    bound = float(table["plain"]["fluency"])
    assert (
        pmi.find_element(By.CSS_SELECTOR, "td.choice").text
        == f"excluded: fluency {float(table['pmi_a0.5_p1']['fluency']):.3f} < bound {bound:.3f}"
    )
    colour = [row.find_element(By.TAG_NAME, "td").value_of_css_property("color") for row in (pmi, line("plain"))]
    assert colour[0] == "rgba(153, 153, 153, 1)" != colour[1]  # greyed
    assert best["best"]["cell"] == "plain" and line("plain").find_element(By.CSS_SELECTOR, "td.choice").text == "best"
    assert driver.find_element(By.ID, "pick").text.startswith("best: plain greedy (")

    # a click on a column head sorts by it, highest first, a second click lowest first
    head = driver.find_element(By.XPATH, "//table[@class='cells']//th[text()='pmi_faith']")
    order = sorted(table, key=lambda cell: float(table[cell]["pmi_faith"]))
    order = [cell for cell in order if cell != "pmi_a0_p1"]
    head.click()
    assert [r.get_attribute("data-cell") for r in driver.find_elements(By.CSS_SELECTOR, "#cells tbody tr")] == order[
        ::-1
    ]
    head.click()
    assert [r.get_attribute("data-cell") for r in driver.find_elements(By.CSS_SELECTOR, "#cells tbody tr")] == order

    # the contexts fold away: the first one open, the others closed, all of them behind one summary
    contexts = driver.find_elements(By.CSS_SELECTOR, "#contexts details.context")
    assert len(contexts) == 5 and [c.get_attribute("open") is not None for c in contexts] == [True] + [False] * 4
    before = driver.execute_script("return document.documentElement.scrollHeight")
    driver.find_element(By.CSS_SELECTOR, "#contexts > summary").click()
    assert driver.execute_script("return document.documentElement.scrollHeight") < before
    driver.set_window_size(768, 1024)  # a tablet: the cell table scrolls within its box, the page does not
    assert driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    assert not [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
