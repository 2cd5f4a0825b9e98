"""What trains: the model, the article's pipeline and its operators' settings, custom
transforms, the training loop with its calibration and operator probe, Dataset AutoTune."""
