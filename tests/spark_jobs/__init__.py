"""Tests of the Spark jobs and the pure modules they run."""
