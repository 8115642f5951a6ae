"""Hudi mdt."""
