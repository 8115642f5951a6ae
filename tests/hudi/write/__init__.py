"""Tests of the Hudi writer."""
