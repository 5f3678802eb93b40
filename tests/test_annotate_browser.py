"""The annotation page in a real browser: Debian's headless Chromium through selenium, the page opened from file://.

One annotator answers every item by keyboard (and one question by mouse), reloads midway and finds everything
kept, exports (the downloaded file and the copy-paste fallback agree), and the export goes through
``faithkit annotate report``, whose numbers are checked against a count by hand. The browser's storage is
searched for anything that would unblind the task, and the layout is checked at laptop, tablet and phone widths:
the title, the keyboard hint, the open guidelines with each question's short line, the flag on a response cut
mid-sentence and an empty history (set ANNOTATE_SCREENSHOTS=DIR to keep the screenshots). scripts/install.sh
installs chromium and chromium-driver when run as root.
"""

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from faithkit.annotate import ANSWERS, DIMENSIONS, System, build_task, read_annotations, summarize
from tests.cli.helpers import run_main, write_jsonl
from tests.test_annotate import generate_output

pytestmark = pytest.mark.slow

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
"""Without the background-networking flags Chromium stalls on a closed network."""
ITEMS = 6


@pytest.fixture
def browser(tmp_path):
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip(f"{CHROMIUM} and {CHROMEDRIVER} are missing; run scripts/install.sh as root to install them")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    downloads = tmp_path / "downloads"
    downloads.mkdir()
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(flag)
    options.add_experimental_option(
        "prefs", {"download.default_directory": str(downloads), "download.prompt_for_download": False}
    )
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_window_size(1366, 768)
    try:
        yield driver, downloads
    finally:
        driver.quit()


def reload(driver) -> None:
    """``driver.refresh()`` once the page's last save has left it: Chromium hands a page's localStorage writes to the
    browser process asynchronously, and a reload at once can read the state from before them (it did on a loaded CI
    machine, twice); a person never reloads within a second of a key press."""
    time.sleep(1.0)
    driver.refresh()


def planned_key(item: int, question: int) -> str:
    """The key pressed for question 0..5 (response 1's three, then response 2's) of item 0..ITEMS-1."""
    return "123"[(item * 7 + question * 5 + item * question) % 3]


def test_keyboard_annotation_reload_export_and_report(browser, tmp_path, capsys):
    from selenium.webdriver.common.by import By

    driver, downloads = browser
    a = generate_output(tmp_path / "greedy.jsonl", [f"It is 330 metres tall ({i})." for i in range(10)])
    b = generate_output(tmp_path / "pmidecode.jsonl", [f"They built it in 1925 ({i})." for i in range(10)])
    task = build_task(System.from_file(a), System.from_file(b), tmp_path / "task", contexts=ITEMS, seed=1)
    driver.get((task.out / "annotate.html").resolve().as_uri())

    def text(element_id):
        return driver.find_element(By.ID, element_id).text

    def keys(sequence):
        driver.find_element(By.TAG_NAME, "body").send_keys(*sequence)

    def checked():
        return [
            [
                driver.execute_script(
                    f"const r = document.querySelector('input[name=\"r{side}-{d}\"]:checked');return r && r.value;"
                )
                for d in DIMENSIONS
            ]
            for side in (0, 1)
        ]

    assert text("where") == f"1 of {ITEMS}" and text("done") == f"0 of {ITEMS} done"
    driver.find_element(By.ID, "annotator").send_keys("Ann")
    expected = {}  # item -> [side 0 answers, side 1 answers] as the page should hold them
    for item in range(ITEMS):
        pressed = [planned_key(item, q) for q in range(6)]
        if item == ITEMS - 1:  # the last answer by mouse: a click on the label of a real radio input
            keys(pressed[:5])
            driver.find_element(By.CSS_SELECTOR, "label[for='r1-grammar-neutral']").click()
            pressed[5] = "2"
        else:
            keys(pressed)
        answers = [ANSWERS[int(k) - 1] for k in pressed]
        expected[str(item + 1)] = [dict(zip(DIMENSIONS, answers[:3])), dict(zip(DIMENSIONS, answers[3:]))]
        assert checked() == [list(expected[str(item + 1)][side].values()) for side in (0, 1)]
        assert text("done") == f"{item + 1} of {ITEMS} done"
        if item == 2:  # reload midway: the answers, the name and the place are kept
            reload(driver)
            assert text("where") == "3 of 6" and text("done") == "3 of 6 done"
            assert driver.find_element(By.ID, "annotator").get_attribute("value") == "Ann"
            assert checked() == [list(expected["3"][side].values()) for side in (0, 1)]
            keys(["\ue012"])  # arrow left: item 2 is as answered
            assert text("where") == "2 of 6" and checked() == [list(expected["2"][s].values()) for s in (0, 1)]
            keys(["\ue014"])
        if item < ITEMS - 1:
            keys(["\ue014"])  # arrow right: the next item
            assert text("where") == f"{item + 2} of {ITEMS}"

    stored = driver.execute_script("return JSON.stringify(Object.assign({}, localStorage))")
    for secret in ("greedy", "pmidecode", "sides", str(tmp_path)):
        assert secret not in stored  # blinding: the storage holds items and page sides only
    assert json.loads(json.loads(stored)[f"faithkit-annotate:{task.id}"])["answers"] == expected

    driver.find_element(By.ID, "export").click()
    deadline = time.monotonic() + 20
    while not list(downloads.glob("*.json")) and time.monotonic() < deadline:
        time.sleep(0.2)
    exported = downloads / f"answers-Ann-{task.id}.json"
    assert exported.is_file(), list(downloads.iterdir())
    export = json.loads(exported.read_text())
    fallback = json.loads(driver.find_element(By.ID, "export-text").get_attribute("value"))
    assert fallback == export  # the copy-paste fallback holds the same answers
    assert export["annotator"] == "Ann" and export["task"] == task.id and export["answers"] == expected
    assert not [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]

    # the paste-in fallback on a fresh page: clear the storage, paste the export, every answer is back
    driver.execute_script("localStorage.clear()")
    reload(driver)
    assert text("done") == f"0 of {ITEMS} done"
    driver.find_element(By.ID, "export").click()  # opens the transfer panel (no name yet: nothing is exported)
    driver.find_element(By.ID, "import-text").send_keys(exported.read_text())
    driver.find_element(By.ID, "import").click()
    assert text("done") == f"{ITEMS} of {ITEMS} done" and text("import-status") == f"Loaded answers for {ITEMS} items."

    # the report of the export, against a count by hand through the key
    assert run_main("annotate", "report", task.out, exported, "--bootstrap", 50) == 0
    assert "| annotator | file | items |" in capsys.readouterr().out
    summary = summarize(read_annotations(task.key, [exported]), resamples=50)
    for dimension in DIMENSIONS:
        for system in ("a", "b"):
            given = [expected[entry["item"]][entry["sides"].index(system)][dimension] for entry in task.key["items"]]
            row = next(r for r in summary["shares"] if (r["dimension"], r["system"]) == (dimension, system))
            assert [row[answer] for answer in ANSWERS] == [given.count(answer) / ITEMS for answer in ANSWERS]
        level = {"agree": 2, "neutral": 1, "disagree": 0}
        pairs = [
            [level[expected[entry["item"]][entry["sides"].index(system)][dimension]] for system in ("a", "b")]
            for entry in task.key["items"]
        ]
        wins = next(r for r in summary["wins"] if r["dimension"] == dimension)
        assert wins["a_wins"] == sum(x > y for x, y in pairs) / ITEMS
        assert wins["b_wins"] == sum(x < y for x, y in pairs) / ITEMS


@pytest.mark.parametrize(
    "width, height, name, side_by_side",
    [(1366, 768, "laptop", True), (768, 1024, "tablet", True), (400, 800, "phone", False)],
)
def test_layout_at_laptop_and_tablet_widths(browser, tmp_path, width, height, name, side_by_side):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver, _ = browser
    cut = "I think it was built by the army in 1925 for the"  # stopped by max-new-tokens
    a = write_jsonl(
        tmp_path / "a.jsonl",
        [
            {
                "id": "row0",
                "document": "The Eiffel Tower is 330 metres tall.",
                "history": [""],
                "response": "It is 330 metres tall, and it was finished in 1889.",
            }
        ],
    )
    b = write_jsonl(
        tmp_path / "b.jsonl",
        [{"id": "row0", "document": "The Eiffel Tower is 330 metres tall.", "history": [""], "response": cut}],
    )
    task = build_task(System.from_file(a), System.from_file(b), tmp_path / "task")
    driver.set_window_size(width, height)
    driver.get((task.out / "annotate.html").resolve().as_uri())

    def seen(selector):
        """Shown, and inside the window (not clipped away, not off to a side)."""
        element = driver.find_element(By.CSS_SELECTOR, selector)
        box = element.rect
        return element.is_displayed() and box["width"] > 1 and 0 <= box["x"] and box["x"] + box["width"] <= width

    assert seen(".bar h1") and driver.find_element(By.CSS_SELECTOR, ".bar h1").text == "Rate two responses"
    assert seen(".nav .keys") is (width > 640)  # a phone has no keyboard to hint at
    assert seen("#guide")  # the guidelines are open when the page opens
    statements = {d: driver.find_element(By.ID, f"s-0-{d}").text for d in DIMENSIONS}
    assert "conveys nothing incorrect" in statements["relevance"]
    assert "agree only if it reads like an expert's writing" in statements["grammar"]
    cut_side = [driver.find_element(By.ID, f"response-{side}").text for side in (0, 1)].index(cut)
    assert seen(f"#cut-{cut_side}") and not driver.find_element(By.ID, f"cut-{1 - cut_side}").is_displayed()
    assert "mid-sentence" in driver.find_element(By.ID, f"cut-{cut_side}").text
    turns = driver.find_elements(By.CSS_SELECTOR, "#history li")
    assert [(turn.text, turn.get_attribute("class")) for turn in turns] == [("(no earlier turns)", "empty")]
    driver.find_element(By.ID, "guide-button").click()  # hidden once the annotator hides it, after a reload too
    reload(driver)
    WebDriverWait(driver, 10).until(lambda d: d.find_elements(By.ID, "s-0-faithfulness"))  # the page's script ran
    assert not driver.find_element(By.ID, "guide").is_displayed()
    driver.find_element(By.TAG_NAME, "body").send_keys("1", "2")
    inner, scroll = driver.execute_script("return [window.innerWidth, document.documentElement.scrollWidth]")
    assert scroll <= inner  # nothing sticks out sideways
    first, second = (driver.find_element(By.ID, f"response-title-{side}").rect for side in (0, 1))
    assert (first["y"] == second["y"] and first["x"] < second["x"]) is side_by_side
    questions = [driver.find_element(By.CSS_SELECTOR, f"fieldset[data-question='{q}']").rect for q in (0, 3)]
    assert not side_by_side or questions[0]["y"] == questions[1]["y"]  # the two responses' rows line up
    screenshot = tmp_path / f"{name}.png"
    driver.save_screenshot(str(screenshot))
    if os.environ.get("ANNOTATE_SCREENSHOTS"):
        folder = Path(os.environ["ANNOTATE_SCREENSHOTS"])
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(screenshot, folder / screenshot.name)


def test_two_tabs_of_one_task_stay_in_step(browser, tmp_path):
    """Answers given in one tab appear in another tab of the same task, so neither overwrites the other's."""
    from selenium.webdriver.common.by import By

    driver, _ = browser
    a = generate_output(tmp_path / "a.jsonl", ["Yes, it is tall.", "It opened in 1889."])
    b = generate_output(tmp_path / "b.jsonl", ["No.", "It opened in 1925."])
    task = build_task(System.from_file(a), System.from_file(b), tmp_path / "task")
    url = (task.out / "annotate.html").resolve().as_uri()
    driver.get(url)
    first = driver.current_window_handle
    driver.switch_to.new_window("tab")
    driver.get(url)
    driver.find_element(By.TAG_NAME, "body").send_keys("3", "3")
    driver.switch_to.window(first)
    assert driver.find_element(By.ID, "r0-faithfulness-disagree").is_selected()
    assert driver.find_element(By.ID, "r0-relevance-disagree").is_selected()
    driver.find_element(By.TAG_NAME, "body").send_keys("1")  # the first open question is highlighted: grammar
    stored = json.loads(driver.execute_script(f"return localStorage.getItem('faithkit-annotate:{task.id}')"))
    assert stored["answers"]["1"][0] == {"faithfulness": "disagree", "relevance": "disagree", "grammar": "agree"}
