"""Meta-evaluation: how well metrics agree with human labels on benchmarks, with plots and reports."""
