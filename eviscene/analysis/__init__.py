"""Questions analysts ask of the log, answered from the views: why an episode was kept or
dropped, how two runs differ."""
