"""Who may see what: accounts and sign-in (``auth``, ``accounts``), teams and their members,
share links and the visitors who open them.
"""
