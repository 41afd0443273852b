"""Moving tokenizers in and out: imports from other libraries' files, downloads in every format
that fits, and the backup and restore of a whole installation.
"""
