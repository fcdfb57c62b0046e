"""Datasets: a check file's `cases:` and `cases_from:` rows, loaded, named and rendered.

A family (a check with cases) expands here into one plain definition per case: its id, its
row, its text fields with `{{ case.<field> }}` filled in, and its own definition digest. The
validate stage plans each as an ordinary check; nothing above it has a second code path.

May import: settings, models, assertions, projectstate and core.
"""
