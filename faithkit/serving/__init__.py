"""Models and the engines that serve them: loading a model by name (:mod:`.models`, the names checked without torch in
:mod:`.model_names`), the precisions it runs in (:mod:`.precision`), target log-probabilities computed without
repeated work (:mod:`.scoring`), and a serving engine over its OpenAI-compatible API (:mod:`.engine`)."""
