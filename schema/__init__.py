"""Event-log DDL migrations and JSON Schemas of every file format (data only)."""
