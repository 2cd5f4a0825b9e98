"""The dataset: the generated or user ImageFolder and its manifest (dataset), the prepared
MindRecord copy at a bounded resolution (prepare), and what a run reads of either (sources)."""
