"""Where results go for people: the report and its figures, the what-if part of it, the
spread across repeats, and MLflow (tracking)."""
