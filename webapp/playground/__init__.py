"""The playground: encoding text and showing its tokens as spans, the inspector, Compare, the
vocabulary browser and its charts, and how the typed text travels between those pages.
"""
