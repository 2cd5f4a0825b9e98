"""What a run's numbers mean, one module per question: the what-if model (whatif) and its advice
(advisor), the window's validity, the one answer per arm (decision) and its evidence (diagnosis),
remedies and their proof, the verification's verdict (verify), the peer tools, the diagnosis
benchmark's score (scenarios), the claims and their scorecard."""
