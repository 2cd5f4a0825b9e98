"""What a run's numbers mean, a module per question: the what-if model and its advice, validity,
the one answer per arm and its evidence, remedies and their proof, peers, benchmark, claims."""
