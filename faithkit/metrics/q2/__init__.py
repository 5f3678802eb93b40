"""Q² (Honovich et al., EMNLP 2021): the metric (:mod:`.metric`), what a backend of each stage is (:mod:`.stages`),
the swappable backends (:mod:`.backends`: the paper's hub models in :mod:`.hub`, offline ones in :mod:`.offline`),
and the offline specs read without torch (:mod:`.specs`)."""
