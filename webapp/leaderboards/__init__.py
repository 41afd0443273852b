"""Leaderboards: a team's tokenizers scored on held-out corpora by a background job, and
their pages.
"""
