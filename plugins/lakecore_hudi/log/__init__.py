"""Hudi log."""
