"""Calibration: run each judge on labelled cases, record how often it agreed, gate on the record.

May import: isolation, runners, stagefiles, checks, harness, datasets, settings, models,
projectstate and core.
"""
