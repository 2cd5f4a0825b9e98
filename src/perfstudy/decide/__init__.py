"""What a run's numbers mean: the what-if model (advisor), the one answer per arm (decision),
its evidence (diagnosis, analysis), remedies, the scenario benchmark's score, claims."""
