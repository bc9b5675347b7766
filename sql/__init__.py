"""SQL view definitions, applied in file-name order (data only)."""
