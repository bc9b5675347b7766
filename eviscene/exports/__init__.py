"""Materializing views into files training stacks and analysts load: run directories, datasets."""
