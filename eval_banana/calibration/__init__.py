"""Calibration: run each judge on labelled cases, record how often it agreed, gate on the record."""
