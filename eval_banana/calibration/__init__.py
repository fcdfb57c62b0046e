"""Calibration: run each judge on labelled cases, record how often it agreed, gate on the record.

May import runners, sampling, isolation, harness, stagefiles, settings, models and core.
"""
