"""Running one check several times (samples) and deciding its verdict by a stated rule.

May import: runners, harness and models.
"""
