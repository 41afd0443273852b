"""The share-link pages: what a link's holder opens (a tokenizer's read-only pages, a
leaderboard, a shared text). They sit above the areas whose pages they serve; creating links and
deciding what a holder may read stay in ``access``.
"""
