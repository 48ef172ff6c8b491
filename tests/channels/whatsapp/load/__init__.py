"""Tests of ``harness load``."""
