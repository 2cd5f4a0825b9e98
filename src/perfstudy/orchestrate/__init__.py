"""What the DAG and the scripts call: a study's arms from workflow/config.yaml (study),
the command-line guard that turns errors into one sentence (cli), SLURM job states (cluster)."""
