"""Helpers of the test suite that are not fixtures (``from helpers.run_if import run_if``)."""
