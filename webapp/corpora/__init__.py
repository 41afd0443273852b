"""Corpora: the upload form and pages (``views``), where uploads are decoded and stored, their
statistics and the background analysis job that computes them, and held-out splits for evaluation.
"""
