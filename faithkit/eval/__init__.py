"""Meta-evaluation: benchmarks, their statistics, plots and reports."""
