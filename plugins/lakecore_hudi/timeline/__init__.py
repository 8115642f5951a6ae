"""Hudi timeline."""
