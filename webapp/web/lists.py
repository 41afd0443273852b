"""How many rows one page may list or offer, so no page's cost grows with a team's history.

Every list page reads at most :data:`LIST_ROWS` rows, newest first, and says when it stopped
there; every picker (a ``<select>`` or a set of checkboxes naming tokenizers or corpora) offers
at most :data:`PICKER_ROWS`. A team with more finds the rest through search or the API's pages.
"""

LIST_ROWS = 500
PICKER_ROWS = 200
