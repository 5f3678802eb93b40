"""Settings: each option declared once (:mod:`.options`), read from flags, YAML files (:mod:`.configfile`) or dicts
as its field's type, and every number checked finite (:mod:`.numbers`). No torch, so the command line builds its
flags from these declarations quickly."""
