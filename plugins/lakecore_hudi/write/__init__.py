"""Hudi write."""
