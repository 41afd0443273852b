"""Chat templates: counting a conversation as a model sees it, with templates rendered in a
bounded sandbox process, and the chat page.
"""
