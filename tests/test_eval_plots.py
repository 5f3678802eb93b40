"""The meta-evaluation figures are written as real, non-trivial PNGs."""

import matplotlib.image

from faithkit.eval import plots

LABELS = [1, 1, 0, 1, 0, 0]
NAMED = {"metric": [0.9, 0.8, 0.7, 0.6, 0.5, 0.4], "baseline": [0.2, 0.9, 0.5, 0.1, 0.3, 0.6]}


def _check_png(path):
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = matplotlib.image.imread(path)
    assert image.shape[0] > 300 and image.shape[1] > 300
    assert image.std() > 0.05  # not a blank canvas: curves, axes and text were drawn


def test_roc_curves_png(tmp_path):
    path = plots.roc_curves(NAMED, LABELS, tmp_path / "sub" / "roc.png", title="test")
    assert path == tmp_path / "sub" / "roc.png"
    _check_png(path)


def test_score_histograms_png(tmp_path):
    path = plots.score_histograms(NAMED, LABELS, tmp_path / "hist.png", class_names=("inconsistent", "consistent"))
    _check_png(path)
