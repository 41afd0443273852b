"""Who may see what: accounts and sign-in (``auth``, ``accounts``), teams and their members,
share links and what the visitors who open them may read (their pages are ``webapp/sharing``).
"""
