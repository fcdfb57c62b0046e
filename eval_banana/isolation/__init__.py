"""Judges that cannot touch the project: change detection and disposable copies."""
