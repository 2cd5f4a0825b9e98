"""What every stage may use: the typed run config (Hydra + OmegaConf), atomic file I/O,
and provenance (git, CPU, packages). Imports nothing else of perfstudy."""
