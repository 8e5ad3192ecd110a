"""Wire and domain contracts shared by every plane: plain data, no frameworks."""
