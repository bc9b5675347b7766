"""The click command layer: one module per command group, each a thin shell over the library."""
